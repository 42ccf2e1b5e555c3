// Command authorizer is bucketgate's API Gateway Lambda REQUEST authorizer: one binary
// for REST APIs (a policy, 429 through the ACCESS_DENIED gateway response) and HTTP APIs
// (payload 1.0 or 2.0). main only wires: package app builds the handler of package
// internal/authorizer from the environment.
package main

import "github.com/bucketgate/bucketgate/internal/app"

func main() { app.Main(app.Authorizer) }
