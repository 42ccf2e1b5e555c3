package benchreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/runtimeapi"
)

// Bootstrap is one function's Lambda binary: its size as shipped and how long it takes
// from process start to asking the runtime API for its first invocation.
type Bootstrap struct {
	// Function is the package, such as functions/authorizer.
	Function string
	// Bytes is the size of the stripped linux/arm64 bootstrap.
	Bytes int64
	// Ready is the least start-to-ready time over the starts, of a native build.
	Ready time.Duration
	// ReadyRegistry is Ready with a registry table set (REGISTRY_TABLE), so that the
	// DynamoDB client is made at init; zero when not measured.
	ReadyRegistry time.Duration
}

// MiB is Bytes in mebibytes.
func (b Bootstrap) MiB() float64 { return float64(b.Bytes) / (1 << 20) }

// bootstrapHeader heads item 5's table, whose rows are Bootstrap.row's.
const bootstrapHeader = "| function | bootstrap | ready | ready with a registry table |\n|---|---|---|---|\n"

// row is b's row of item 5's table, a line.
func (b Bootstrap) row() string {
	withTable := "not measured"
	if b.ReadyRegistry > 0 {
		withTable = b.ReadyRegistry.Round(time.Microsecond).String()
	}
	return fmt.Sprintf("| %s | %.2f MiB | %v | %s |\n", b.Function, b.MiB(), b.Ready.Round(time.Microsecond), withTable)
}

// lambdaBuild is how a bootstrap is built for Lambda: static, stripped, without the RPC
// mode that the provided runtimes do not use.
var lambdaBuild = []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w"}

// buildBootstrap builds the main package in dir (in whichever module holds it) for
// goos/goarch into out and returns the file's size.
func buildBootstrap(ctx context.Context, dir, goos, goarch, out string) (int64, error) {
	cmd := exec.CommandContext(ctx, "go", append(slices.Clone(lambdaBuild), "-o", out, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build %s for %s/%s: %w: %s", dir, goos, goarch, err, bytes.TrimSpace(msg))
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, fmt.Errorf("build %s: %w", dir, err)
	}
	return st.Size(), nil
}

// readyTimeout bounds one start: a bootstrap that never asks for work is an error.
const readyTimeout = 30 * time.Second

// timeToReady starts binary with env and AWS_LAMBDA_RUNTIME_API pointing at a Runtime
// API on loopback (internal/runtimeapi), and returns the time from starting the process
// to its first request for an invocation. The process is killed then.
func timeToReady(ctx context.Context, binary string, env []string) (time.Duration, error) {
	api, err := runtimeapi.New()
	if err != nil {
		return 0, err
	}
	defer api.Close()

	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+api.Addr)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	select {
	case at := <-api.Polled():
		return at.Sub(start), nil
	case ferr := <-api.InitError():
		return 0, fmt.Errorf("%s failed its init: %w: %s", binary, ferr, bytes.TrimSpace(output.Bytes()))
	case err := <-exited:
		exited <- err // for the deferred wait
		return 0, fmt.Errorf("%s exited before asking for an invocation (%v): %s", binary, err, bytes.TrimSpace(output.Bytes()))
	case <-ctx.Done():
		return 0, fmt.Errorf("%s did not ask for an invocation within %v: %w", binary, readyTimeout, context.Cause(ctx))
	}
}

// MeasureBootstrap builds the function at root/pkg for Lambda (linux/arm64) to size it,
// and for this machine to start it `starts` times with env, keeping the quickest; and as
// many times with registryEnv (env with a registry table) unless it is nil.
func MeasureBootstrap(ctx context.Context, root, pkg string, env, registryEnv []string, starts int) (Bootstrap, error) {
	dir, err := os.MkdirTemp("", "bootstrap")
	if err != nil {
		return Bootstrap{}, err
	}
	defer os.RemoveAll(dir)
	b := Bootstrap{Function: pkg}
	if b.Bytes, err = buildBootstrap(ctx, filepath.Join(root, pkg), "linux", "arm64", filepath.Join(dir, "bootstrap-arm64")); err != nil {
		return Bootstrap{}, err
	}
	native := filepath.Join(dir, "bootstrap")
	if _, err := buildBootstrap(ctx, filepath.Join(root, pkg), runtime.GOOS, runtime.GOARCH, native); err != nil {
		return Bootstrap{}, err
	}
	if b.Ready, err = quickestStart(ctx, native, env, starts); err != nil {
		return Bootstrap{}, err
	}
	if registryEnv != nil {
		if b.ReadyRegistry, err = quickestStart(ctx, native, registryEnv, starts); err != nil {
			return Bootstrap{}, err
		}
	}
	return b, nil
}

// quickestStart starts binary `starts` times with env and returns the least
// start-to-ready time.
func quickestStart(ctx context.Context, binary string, env []string, starts int) (time.Duration, error) {
	var times []time.Duration
	for range starts {
		d, err := timeToReady(ctx, binary, env)
		if err != nil {
			return 0, err
		}
		times = append(times, d)
	}
	if len(times) == 0 {
		return 0, errors.New("no starts")
	}
	return slices.Min(times), nil
}

// LambdaEnv is env as Lambda would give it to a function: without AWS_CA_BUNDLE, which
// a sandbox or a developer's shell may set and which makes the AWS SDK read a CA bundle
// when it loads its configuration (a registry table's client, at init). Lambda sets no
// such variable.
func LambdaEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") })
}
