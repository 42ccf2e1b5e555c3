// Command check is bucketgate's direct-invocation decision API, an AWS Lambda function:
// services invoke it with one check ({"key", "plan" or "rules", "cost"}) or a batch
// ({"checks": [...]}) and get the decision back (see package checkapi for the contract
// and package checkclient for a Go client). main only wires; the handler is package
// internal/check.
package main

import (
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/check"
)

func main() { app.Main(check.FunctionName, check.NewLambda) }
