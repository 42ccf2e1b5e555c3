package check

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// FunctionName is the Function dimension of the check function's metrics.
const FunctionName = "check"

// New builds the Handler from env: the settings, the rate-limit configuration and the
// Redis client, all read through env.Getenv. Its error names the variable to set or fix.
func New(env app.Env) (*Handler, error) {
	g, cfg, s, err := app.NewDecider(env.Getenv)
	if err != nil {
		return nil, err
	}
	return &Handler{
		Decider: g,
		Plans:   cfg,
		Metrics: telemetry.NewEmitter(env.Metrics, s.Namespace, FunctionName),
		Log:     env.Log,
		Now:     time.Now,
	}, nil
}

// NewLambda is New as an app.Builder: the Handler built from env, which is a Lambda
// handler itself.
func NewLambda(env app.Env) (lambda.Handler, error) {
	h, err := New(env)
	if err != nil {
		return nil, err // never a nil *Handler in a non-nil interface
	}
	return h, nil
}
