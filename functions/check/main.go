// Command check is bucketgate's direct-invocation decision API, an AWS Lambda function:
// services invoke it with one check ({"key", "plan" or "rules", "cost"}) or a batch
// ({"checks": [...]}) and get the decision back (see package checkapi for the contract
// and package checkclient for a Go client). main only wires: package app builds the
// handler of package internal/check from the environment.
package main

import "github.com/bucketgate/bucketgate/internal/app"

func main() { app.Main(app.Check) }
