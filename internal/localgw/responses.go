// Package localgw is a local stand-in for API Gateway in front of the authorizer: it
// turns HTTP requests into REST API REQUEST authorizer events, invokes the real handler
// in-process, and answers denials and failures with the gateway responses that
// template.yaml declares (read from it, not restated). Allowed requests go to a backend
// (the sample one, or your service through ProxyBackend) with the rate-limit values as
// request headers, as the template's HTTP integration sends them, and the answer gets
// the rate-limit headers, as the template's HTTP API maps them.
package localgw

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/config"
)

// Gateway response types that the authorizer's answers map to.
const (
	AccessDenied        = "ACCESS_DENIED"                  // a Deny policy
	Unauthorized        = "UNAUTHORIZED"                   // the error "Unauthorized"
	AuthorizerFailure   = "AUTHORIZER_FAILURE"             // any other error
	AuthorizerConfigErr = "AUTHORIZER_CONFIGURATION_ERROR" // an answer API Gateway cannot read
	IntegrationFailure  = "INTEGRATION_FAILURE"            // the backend did not answer
	// Throttled is the stage's (or the account's) throttle turning a request away before
	// the authorizer runs; the local gateway has no throttle, so it never answers it.
	Throttled = "THROTTLED"
)

// Response is one gateway response: a status, headers mapped from the request or the
// authorizer context, and a body template.
type Response struct {
	// StatusCode is the HTTP status.
	StatusCode int `yaml:"StatusCode"`
	// ResponseParameters.Headers maps a header name to 'literal', context.authorizer.KEY
	// or method.request.header.NAME.
	ResponseParameters struct {
		Headers map[string]string `yaml:"Headers"`
	} `yaml:"ResponseParameters"`
	// ResponseTemplates maps a content type to a body; $context.authorizer.KEY in it is
	// replaced by the context value.
	ResponseTemplates map[string]string `yaml:"ResponseTemplates"`
}

// statusCode is the pattern of a gateway response's StatusCode (a string in
// CloudFormation: 429 unquoted is read as "429").
var statusCode = regexp.MustCompile(`^[1-5][0-9][0-9]$`)

// UnmarshalYAML reads a gateway response as CloudFormation takes it: its StatusCode
// three digits, 100 to 599, quoted ('429', as a JSON template writes it) or not.
func (r *Response) UnmarshalYAML(n *yaml.Node) error {
	rest := *n // n less its StatusCode, which plain reads as an int
	rest.Content = nil
	code := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "StatusCode" {
			rest.Content = append(rest.Content, k, v)
			continue
		}
		if v.Kind != yaml.ScalarNode || !statusCode.MatchString(v.Value) {
			shown := ""
			if v.Kind == yaml.ScalarNode {
				shown = fmt.Sprintf(" %q", v.Value)
			}
			return fmt.Errorf("line %d: StatusCode%s: want a status code of three digits, 100 to 599, like 429", v.Line, shown)
		}
		code, _ = strconv.Atoi(v.Value) // three digits: cannot fail
	}
	type plain Response
	if err := rest.Decode((*plain)(r)); err != nil {
		return err
	}
	r.StatusCode = code
	return nil
}

// Responses are a REST API's gateway responses by type.
type Responses map[string]Response

// defaults are API Gateway's own responses for the types a template leaves out.
var defaults = Responses{
	AccessDenied:        {StatusCode: http.StatusForbidden, ResponseTemplates: map[string]string{"application/json": `{"Message":"User is not authorized to access this resource with an explicit deny"}`}},
	Unauthorized:        {StatusCode: http.StatusUnauthorized, ResponseTemplates: map[string]string{"application/json": `{"message":"Unauthorized"}`}},
	AuthorizerFailure:   {StatusCode: http.StatusInternalServerError, ResponseTemplates: map[string]string{"application/json": `{"message":null}`}},
	AuthorizerConfigErr: {StatusCode: http.StatusInternalServerError, ResponseTemplates: map[string]string{"application/json": `{"message":null}`}},
	IntegrationFailure:  {StatusCode: http.StatusGatewayTimeout, ResponseTemplates: map[string]string{"application/json": `{"message":null}`}},
	Throttled:           {StatusCode: http.StatusTooManyRequests, ResponseTemplates: map[string]string{"application/json": `{"message":"Too Many Requests"}`}},
}

// template is the part of a SAM template that LoadResponses reads.
type template struct {
	Resources map[string]struct {
		Type       string `yaml:"Type"`
		Properties struct {
			GatewayResponses Responses `yaml:"GatewayResponses"`
		} `yaml:"Properties"`
	} `yaml:"Resources"`
}

// LoadResponses reads the gateway responses of the one AWS::Serverless::Api in the SAM
// template at path.
func LoadResponses(path string) (Responses, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway responses: %w", err)
	}
	var t template
	if err := yaml.Unmarshal(doc, &t); err != nil {
		return nil, fmt.Errorf("gateway responses: %s: %w", path, config.SyntaxError(err, doc))
	}
	var found Responses
	for name, r := range t.Resources {
		if r.Type != "AWS::Serverless::Api" {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("gateway responses: %s: more than one AWS::Serverless::Api (%s)", path, name)
		}
		found = r.Properties.GatewayResponses
	}
	if found == nil {
		return nil, fmt.Errorf("gateway responses: %s: no AWS::Serverless::Api with GatewayResponses", path)
	}
	return found, nil
}

// The fallback gateway response types: a template's response for the 4XX, or the 5XX,
// types it leaves out.
const (
	default4XX = "DEFAULT_4XX"
	default5XX = "DEFAULT_5XX"
)

// Lookup returns the response of type kind as API Gateway answers it: the template's,
// else the template's DEFAULT_4XX or DEFAULT_5XX by the type's default status, else API
// Gateway's default; a status or body the template's response leaves out is the
// default's.
func (rs Responses) Lookup(kind string) Response {
	d := defaults[kind]
	r, ok := rs[kind]
	if !ok {
		fallback := default5XX
		if d.StatusCode < http.StatusInternalServerError {
			fallback = default4XX
		}
		if r, ok = rs[fallback]; !ok {
			return d
		}
	}
	if r.StatusCode == 0 {
		r.StatusCode = d.StatusCode
	}
	if r.ResponseTemplates == nil {
		r.ResponseTemplates = d.ResponseTemplates
	}
	return r
}

var contextRef = regexp.MustCompile(`\$context\.authorizer\.([A-Za-z0-9_]+)`)

// Write answers w with r, filling mappings from the authorizer context and req.
func (r Response) Write(w http.ResponseWriter, req *http.Request, context map[string]any) {
	for name, source := range r.ResponseParameters.Headers {
		if v, ok := mapValue(source, req, context); ok {
			w.Header()[name] = []string{v} // as the template spells it, as API Gateway sends it
		}
	}
	body, ok := r.ResponseTemplates["application/json"]
	if ok {
		w.Header().Set("Content-Type", "application/json")
		body = contextRef.ReplaceAllStringFunc(body, func(ref string) string {
			return format(context[contextRef.FindStringSubmatch(ref)[1]])
		})
	}
	w.WriteHeader(r.StatusCode)
	_, _ = w.Write([]byte(body))
}

// mapValue resolves one header mapping expression.
func mapValue(source string, req *http.Request, context map[string]any) (string, bool) {
	switch {
	case len(source) >= 2 && strings.HasPrefix(source, "'") && strings.HasSuffix(source, "'"):
		return source[1 : len(source)-1], true
	case strings.HasPrefix(source, "context.authorizer."):
		v, ok := context[strings.TrimPrefix(source, "context.authorizer.")]
		return format(v), ok
	case strings.HasPrefix(source, "method.request.header."):
		v := req.Header.Get(strings.TrimPrefix(source, "method.request.header."))
		return v, v != ""
	}
	return "", false
}

// format renders a context value as API Gateway does: numbers without exponent, a
// missing value as nothing.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	return fmt.Sprint(v)
}
