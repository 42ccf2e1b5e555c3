package authorizer

import (
	"cmp"
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// IAM policy parts of a REST (and HTTP API payload 1.0) authorizer answer.
const (
	policyVersion = "2012-10-17"
	invokeAction  = "execute-api:Invoke"
	effectAllow   = "Allow"
	effectDeny    = "Deny"
)

// HandleREST answers a REST API REQUEST authorizer event: an Allow or Deny policy for
// its method ARN, the identity as principal id, and the authorizer context.
func (h *Handler) HandleREST(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	return h.policyAnswer(ctx, ev.MethodArn, call{
		headers:   ev.Headers,
		multi:     ev.MultiValueHeaders,
		sourceIP:  ev.RequestContext.Identity.SourceIP,
		method:    cmp.Or(ev.HTTPMethod, ev.RequestContext.HTTPMethod),
		path:      cmp.Or(ev.Path, ev.Resource),
		requestID: ev.RequestContext.RequestID,
	})
}

// HTTPV1Request is an HTTP API REQUEST authorizer event in payload format 1.0:
// aws-lambda-go's type, with the multi-value headers that API Gateway sends too.
type HTTPV1Request struct {
	events.APIGatewayV2CustomAuthorizerV1Request
	// MultiValueHeaders holds every value of every header, by name.
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
}

// HandleHTTPV1 answers an HTTP API REQUEST authorizer event in payload format 1.0,
// whose answer is the same IAM policy as a REST API's.
func (h *Handler) HandleHTTPV1(ctx context.Context, ev HTTPV1Request) (events.APIGatewayV2CustomAuthorizerIAMPolicyResponse, error) {
	a, err := h.policyAnswer(ctx, ev.MethodArn, call{
		headers:   ev.Headers,
		multi:     ev.MultiValueHeaders,
		sourceIP:  ev.RequestContext.Identity.SourceIP,
		method:    cmp.Or(ev.HTTPMethod, ev.RequestContext.HTTPMethod),
		path:      stripStage(cmp.Or(ev.Path, ev.Resource), ev.RequestContext.Stage),
		requestID: ev.RequestContext.RequestID,
	})
	return events.APIGatewayV2CustomAuthorizerIAMPolicyResponse{PrincipalID: a.PrincipalID, PolicyDocument: a.PolicyDocument, Context: a.Context}, err
}

// policyAnswer decides c and returns the policy answer for arn; the zero answer with
// the error of decide.
func (h *Handler) policyAnswer(ctx context.Context, arn string, c call) (events.APIGatewayCustomAuthorizerResponse, error) {
	o, err := h.decide(ctx, c)
	if err != nil {
		return events.APIGatewayCustomAuthorizerResponse{}, err
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID:    o.id.String(),
		PolicyDocument: policy(o.result.Allowed, arn),
		Context:        h.authContext(o),
	}, nil
}

// policy allows or denies invoking arn.
func policy(allow bool, arn string) events.APIGatewayCustomAuthorizerPolicy {
	effect := effectDeny
	if allow {
		effect = effectAllow
	}
	return events.APIGatewayCustomAuthorizerPolicy{
		Version:   policyVersion,
		Statement: []events.IAMPolicyStatement{{Action: []string{invokeAction}, Effect: effect, Resource: []string{arn}}},
	}
}
