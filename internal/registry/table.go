package registry

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate/internal/awsretry"
)

// MaxID is the longest identity a Table looks up, in bytes: DynamoDB's limit on a
// partition key. A longer one, or one that is not UTF-8, is not in any table.
const MaxID = 2048

// getter is the one DynamoDB call a Table makes; *dynamodb.Client is one.
type getter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Table reads records from an Amazon DynamoDB table whose partition key is the string
// attribute KeyAttribute. It is safe for concurrent use. A read that failed for a
// reason worth another try (a throttle, a 5xx, a connection reset) is tried again at
// once (awsretry.AtOnce), up to three attempts, the retries of all its reads capped
// together by one retry quota: the SDK's own backoff would wait out a read's deadline
// (REGISTRY_TIMEOUT_MS), stalling every lookup of a throttled table for it and leaving
// "context deadline exceeded" to log instead of the throttle.
type Table struct {
	client  getter
	name    string
	retryer aws.Retryer
}

// NewTable returns the Table called name, read through client (a *dynamodb.Client).
func NewTable(client getter, name string) *Table {
	return &Table{client: client, name: name, retryer: awsretry.AtOnce()}
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// Get reads the record of the item id (an identity's ItemID) with one GetItem
// (eventually consistent: a write shows within about a second), and when that finds
// nothing, with a second, strongly consistent one: so that a key first read once its
// PutItem returned is found, and a cache does not keep it unknown for a period (one that
// read it before keeps it unknown until the period ends). found
// is false when the table holds no item id.
// An item DecodeItem refuses, or one whose id differs, is a *RecordError; any other
// error is DynamoDB's, and says nothing about id.
func (t *Table) Get(ctx context.Context, id string) (r Record, found bool, err error) {
	if len(id) > MaxID || !utf8.ValidString(id) || id == "" {
		return Record{}, false, nil
	}
	item, err := t.getItem(ctx, id, false)
	if err == nil && item == nil {
		item, err = t.getItem(ctx, id, true)
	}
	if err != nil || item == nil {
		return Record{}, false, err
	}
	r, err = DecodeItem(item)
	if err != nil {
		return r, true, err
	}
	if r.ID != id {
		return r, true, &RecordError{ID: id, Attribute: attrID, Err: fmt.Errorf("%q: want the id it was read by", quoted(r.ID))}
	}
	return r, true, nil
}

// GetConfig reads the configuration item id (ConfigID, or a VersionID) with one GetItem
// (eventually consistent). found is false when the table holds no such item. An item
// DecodeConfigItem refuses is a *RecordError, with what could be read of it; any other
// error is DynamoDB's.
func (t *Table) GetConfig(ctx context.Context, id string) (s StoredConfig, found bool, err error) {
	item, err := t.getItem(ctx, id, false)
	if err != nil || item == nil {
		return StoredConfig{}, false, err
	}
	s, err = DecodeConfigItem(item)
	if err == nil && s.ID != id {
		err = &RecordError{ID: id, Attribute: attrID, Err: fmt.Errorf("%q: want the id it was read by", quoted(s.ID))}
	}
	return s, true, err
}

// getItem reads the item id with one GetItem, strongly consistent when consistent is
// set, else eventually consistent (half the read capacity): nil when the table holds
// none.
func (t *Table) getItem(ctx context.Context, id string, consistent bool) (map[string]types.AttributeValue, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(t.name),
		Key:            map[string]types.AttributeValue{KeyAttribute: &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(consistent),
	}, func(o *dynamodb.Options) { o.Retryer = t.retryer })
	if err != nil {
		return nil, fmt.Errorf("registry table %s: %w", t.name, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}
