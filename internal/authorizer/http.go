package authorizer

import (
	"cmp"
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// defaultStage is the HTTP API stage served at the root of the API, with no path prefix.
const defaultStage = "$default"

// HandleHTTP answers an HTTP API REQUEST authorizer event in payload format 2.0 with a
// simple response: isAuthorized and the authorizer context. API Gateway turns
// isAuthorized false into 403, whatever the context says.
func (h *Handler) HandleHTTP(ctx context.Context, ev events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	rc := ev.RequestContext
	o, err := h.decide(ctx, call{
		headers:   ev.Headers,
		sourceIP:  rc.HTTP.SourceIP,
		method:    rc.HTTP.Method,
		path:      stripStage(cmp.Or(rc.HTTP.Path, ev.RawPath), rc.Stage),
		requestID: rc.RequestID,
	})
	if err != nil {
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{}, err
	}
	return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: o.result.Allowed, Context: h.authContext(o)}, nil
}

// stripStage removes the "/<stage>" prefix that HTTP APIs put in front of the path of
// every stage but $default, so that route patterns match the same paths on every stage.
func stripStage(path, stage string) string {
	if stage == "" || stage == defaultStage {
		return path
	}
	rest, ok := strings.CutPrefix(path, "/"+stage)
	switch {
	case !ok:
		return path
	case rest == "":
		return "/"
	case rest[0] == '/':
		return rest
	}
	return path
}
