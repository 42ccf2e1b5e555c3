package authorizer

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// FunctionName is the Function dimension of the authorizer's metrics.
const FunctionName = "authorizer"

// New builds the Handler from env: the API key header, the settings, the rate-limit
// configuration and the Redis client, all read through env.Getenv. Its error names
// the variable to set or fix.
func New(env app.Env) (*Handler, error) {
	ids, err := identity.Load(env.Getenv)
	if err != nil {
		return nil, err
	}
	g, cfg, s, err := app.NewDecider(env.Getenv)
	if err != nil {
		return nil, err
	}
	return &Handler{
		Decider:    g,
		Plans:      cfg,
		Identities: ids,
		Metrics:    telemetry.NewEmitter(env.Metrics, s.Namespace, FunctionName),
		Log:        env.Log,
		Now:        time.Now,
	}, nil
}

// NewLambda is New as an app.Builder: the Lambda handler of the Handler built from env.
func NewLambda(env app.Env) (lambda.Handler, error) {
	h, err := New(env)
	if err != nil {
		return nil, err
	}
	return lambda.NewHandler(h.Handle), nil
}
