package app

import (
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"
)

// AtShutdown is atShutdown, for the tests of package app_test.
var AtShutdown = atShutdown

// EvictionReport is evictionReport, for the tests of package app_test.
var EvictionReport = evictionReport

// FlushOnPanic wraps h as Main does, flushing through flush when an invocation panics.
func FlushOnPanic(h lambda.Handler, flush func()) lambda.Handler { return flushOnPanic{h, flush} }

// Invocations is invocations, for the tests of package app_test.
type Invocations = invocations

// Counted wraps h as Main does, counting its invocations in running, logging to log.
func Counted(h lambda.Handler, running *Invocations, log *slog.Logger) lambda.Handler {
	return counted{h, running, log}
}

// BuildShutdown builds f's handler as Build does, and what Main does at SIGTERM with it,
// exiting through exit.
func BuildShutdown(f Function, getenv func(string) string, metrics, logOut io.Writer, exit func(code int)) (lambda.Handler, func(), error) {
	h, p, err := build(f, getenv, metrics, logOut)
	if err != nil {
		return nil, nil, err
	}
	return h, p.shutdown(new(invocations), exit), nil
}
