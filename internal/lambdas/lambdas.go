// Package lambdas lists bucketgate's Lambda functions for the tools that run them
// outside Lambda (cmd/bucketgate-local) and for the tests of template.yaml.
package lambdas

import (
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/check"
)

// Builders are the functions' handler builders by name. A function's name is its
// directory under functions/ (whose main passes the same builder to app.Main), the
// first word of its sample events' file names, and, capitalized and followed by
// "Function", its logical id in template.yaml.
var Builders = map[string]app.Builder{
	authorizer.FunctionName: authorizer.NewLambda,
	check.FunctionName:      check.NewLambda,
}
