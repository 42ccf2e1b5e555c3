package moto

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Bus is an EventBridge event bus on a moto server with a rule that delivers the events
// its pattern matches (every event of one source, for Server.Bus) to an SQS queue, which
// a test reads: what the rule received.
type Bus struct {
	// Name and ARN are the bus's.
	Name, ARN string

	eb    *eventbridge.Client
	sqs   *sqs.Client
	queue string // its URL
}

// Event is an event as EventBridge delivers it to a target (its envelope), with its
// detail as raw JSON.
type Event struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"` // empty from moto
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Detail     json.RawMessage `json:"detail"`
}

// Bus creates the event bus called name on s, a queue, and a rule on the bus that
// delivers every event of source to the queue.
func (s *Server) Bus(t testing.TB, name, source string) *Bus {
	t.Helper()
	cfg := s.Config()
	eb := eventbridge.NewFromConfig(cfg)
	bus, err := eb.CreateEventBus(context.Background(), &eventbridge.CreateEventBusInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("moto: create event bus %s: %v", name, err)
	}
	b := &Bus{Name: name, ARN: aws.ToString(bus.EventBusArn), eb: eb, sqs: sqs.NewFromConfig(cfg)}
	return b.Matching(t, name+"-all", fmt.Sprintf(`{"source": [%q]}`, source))
}

// Matching creates a rule called rule on b's bus, of the event pattern pattern (JSON),
// delivering to a queue of its own, and returns the bus whose Receive reads that queue.
func (b *Bus) Matching(t testing.TB, rule, pattern string) *Bus {
	t.Helper()
	ctx := context.Background()
	queue, err := b.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(rule + "-events")})
	if err != nil {
		t.Fatalf("moto: create queue: %v", err)
	}
	attrs, err := b.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("moto: queue ARN: %v", err)
	}
	if _, err := b.eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(b.Name), EventPattern: aws.String(pattern)}); err != nil {
		t.Fatalf("moto: put rule %s: %v", pattern, err)
	}
	target := ebtypes.Target{Id: aws.String("queue"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}
	if _, err := b.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(b.Name), Targets: []ebtypes.Target{target}}); err != nil {
		t.Fatalf("moto: put targets: %v", err)
	}
	return &Bus{Name: b.Name, ARN: b.ARN, eb: b.eb, sqs: b.sqs, queue: aws.ToString(queue.QueueUrl)}
}

// Receive returns the events delivered to the bus's queue since the last Receive,
// reading until it has n of them or for wait, whichever comes first (n < 0: for wait,
// all it gets). It removes what it returns from the queue.
func (b *Bus) Receive(t testing.TB, n int, wait time.Duration) []Event {
	t.Helper()
	ctx := context.Background()
	var got []Event
	for deadline := time.Now().Add(wait); (n < 0 || len(got) < n) && time.Now().Before(deadline); {
		out, err := b.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(b.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("moto: receive: %v", err)
		}
		for _, m := range out.Messages {
			var e Event
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatalf("moto: a message that is no event: %s: %v", aws.ToString(m.Body), err)
			}
			got = append(got, e)
			if _, err := b.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(b.queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("moto: delete message: %v", err)
			}
		}
	}
	return got
}
