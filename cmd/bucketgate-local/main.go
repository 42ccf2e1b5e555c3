// Command bucketgate-local runs bucketgate on this machine, with no AWS account and no
// Docker: `serve` is a local API Gateway (the real authorizer handler in-process, the
// gateway responses of template.yaml, a sample backend) and, at the same address, the
// Lambda Invoke API of the check function; `invoke` runs one sample event
// through its function and prints the reply. Both use an embedded Redis unless
// REDIS_ADDR names a real one. main only wires; see cli.go.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // once stopping, a second Ctrl-C ends the program at once
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
