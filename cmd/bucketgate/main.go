// Command bucketgate is the operator's command line for a bucketgate deployment.
//
// Its keys commands manage the key registry, the DynamoDB table named by REGISTRY_TABLE
// (or -table), with the AWS SDK's default credentials: create an API key (a random key
// printed once, only its digest stored), revoke it, set its expiry, its plan or its own
// rules, show and list the registry, and create the table for local use. Plans are
// checked against the configuration document the functions load: the table's, or while
// it holds none, that of RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE or the built-in one.
//
// Its config commands keep that document in the table, versioned: show it, put a new
// version (checked by the functions' own loader, written only if no other write came
// between, refused when it would leave an active key without its plan), list the
// versions and roll back to one.
//
// Its buckets commands reach the buckets of an API key, a source address or a tenant
// through the stack's operator function (CHECK_FUNCTION, or -function), invoked with the
// AWS SDK's Lambda client: show them (a peek), refund tokens, or reset them. An API key
// is sent only as its digest. Wherever a command takes an API key, "-" reads it from
// stdin, out of the process list and the shell's history.
//
// With -stack NAME (or BUCKETGATE_STACK) the table and the operator function come from the
// outputs of a deployed stack, read with CloudFormation DescribeStacks when a command
// needs them and is not given them. "bucketgate version" prints the version; run
// "bucketgate help" for the usage.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
