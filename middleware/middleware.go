// Package middleware limits the requests of a Go HTTP service with bucketgate: the
// same Redis, key registry, plans and buckets as the API Gateway authorizer, decided by
// the same code. A service that is not behind API Gateway (ECS, App Runner, a Lambda
// function URL, an ALB target) wraps its handler once:
//
//	limiter, err := middleware.New(middleware.Options{
//		RedisAddr:      "cache.internal:6379",
//		TrustedProxies: []string{"10.0.0.0/8"}, // the load balancer's subnet
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	srv := &http.Server{Addr: ":8080", Handler: limiter.Handler(mux)} // mux: your service's http.Handler
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	served := make(chan error, 1)
//	go func() { served <- srv.ListenAndServe() }()
//	select {
//	case err := <-served: // a port in use: nothing was served
//		limiter.Close()
//		log.Fatal(err) // exit status 1, for a service manager to restart it
//	case <-ctx.Done():
//	}
//	// From here on, a second signal ends the process at once.
//	stop()
//	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second) // within the stop timeout
//	defer cancel()
//	if err := srv.Shutdown(shutdown); err != nil { // the requests in flight finish, or 10 s pass (a longer stream runs on until the process ends),
//		log.Print(err)
//	}
//	closing, cancelClosing := context.WithTimeout(context.Background(), 5*time.Second) // 15 s in all, within ECS's 30 s
//	defer cancelClosing()
//	if err := limiter.Shutdown(closing); err != nil { // then the leases still held are returned and the metrics that wait are written (the metrics alone after 5 s of a silent Redis)
//		log.Print(err)
//	}
//
// A caller is who the authorizer says it is: the API key header's key when the registry
// (or the configuration document) knows it, else the source address (IPv4 one by one,
// IPv6 by its prefix of IPV6_PREFIX_LENGTH, a /64 by default); the source is the
// connection's peer (Request.RemoteAddr), never a header a client writes, unless
// Options.TrustedProxies names the proxies in front of the service. The answers are
// the gateway's: a request the limiter allows reaches the next handler with the
// rate-limit headers on its response (RateLimit, RateLimit-Policy, X-RateLimit-Limit,
// X-RateLimit-Remaining, X-RateLimit-Reset), and the same on its
// request, as the REST API's HTTP integration maps them, in place of any the client
// sent (in any spelling: see ratelimitheaders.SameName); a limited one gets 429
// with Retry-After, the same headers and the gateway's JSON body; a refused identity
// 401; and when Redis (or the registry) cannot decide and the limiter fails closed, 503
// with Retry-After: 1. Each decision counts in the authorizer's EMF metrics (written
// at most once per METRICS_FLUSH_MS, a second, and when the Limiter is closed) and
// writes its log lines. A caller limited through the API is limited through the
// middleware too, and the other way round: they spend the same buckets.
//
// On a route whose configuration reserves an estimate (reserve: N, such as an LLM's
// max_tokens), the next handler finds the reservation in the request's
// X-RateLimit-Reservation header, and settles the actual cost once it knows it with
// Limiter.Settle(ctx, r, used). docs/library.md is the middleware's guide.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// DefaultName is the Function dimension of the middleware's metrics when
// Options.Name is empty.
const DefaultName = "middleware"

// Options configure a Limiter. Every setting of the functions applies, read through
// Getenv under the same names and with the same defaults (docs/configuration.md:
// REDIS_TIMEOUT_MS, FAIL_MODE, REDIS_TLS, METRICS_NAMESPACE, STACK_NAME, LOG_LEVEL, ...);
// a field that is set wins over its variable. The zero Options read everything from
// the environment.
type Options struct {
	// Getenv reads the settings; nil is os.Getenv. It reads bucketgate's variables
	// alone: the AWS SDK (the registry table, a Redis password's secret, IAM tokens,
	// the events) finds its region, credentials and endpoints (AWS_REGION,
	// AWS_ENDPOINT_URL_DYNAMODB, ...) in the process's environment.
	Getenv func(string) string
	// RedisAddr is the Redis or Valkey endpoint, host:port (comma-separated seeds for
	// a cluster); empty is REDIS_ADDR, which is then required.
	RedisAddr string
	// KeyHeader is the name of the API key header; empty is API_KEY_HEADER, or
	// X-API-Key.
	KeyHeader string
	// Config is the configuration document, YAML or JSON: plans, routes, and what
	// becomes of unknown keys and anonymous callers. Empty is RATE_LIMIT_CONFIG or
	// RATE_LIMIT_CONFIG_FILE, or the built-in document. With a registry table
	// (RegistryTable) that holds a document (its config item: bucketgate config), that
	// document is in force instead, as in the functions: this one is the bootstrap,
	// checked by New all the same. It is the document's text, not a file's name:
	// RATE_LIMIT_CONFIG_FILE names a file.
	Config string
	// RegistryTable names the DynamoDB table of API keys (read with the AWS SDK's
	// default configuration); empty is REGISTRY_TABLE, or none: the document's keys.
	RegistryTable string
	// TrustedProxies are the proxies in front of the service, as addresses or CIDR
	// prefixes ("10.0.0.0/8", "192.0.2.7"). A request from one of them is from the
	// rightmost address of its X-Forwarded-For headers that is not a trusted proxy (the
	// hops before it are the client's to write; a hop with a port is its address).
	// Empty trusts none: the source is always Request.RemoteAddr. A prefix of every
	// address (0.0.0.0/0, ::/0) is refused: every hop would be trusted, and the source
	// the leftmost, which the client writes. The entry "unix" trusts a peer on a Unix
	// socket (a sidecar proxy's; the socket's permissions say who may connect), which
	// has no address: untrusted, every request through it is the one shared unknown
	// source.
	TrustedProxies []string
	// Name is the Function dimension of the metrics (1 to 1024 bytes of printable
	// ASCII, not only spaces, as CloudWatch takes a dimension value); empty is
	// DefaultName.
	Name string
	// Metrics receives the EMF metric lines; nil is os.Stdout, where the CloudWatch
	// agent or a container's awslogs driver reads them. It is written by one goroutine
	// at a time, and so is LogOutput, the two one at a time when they are one writer;
	// a writer given to two Limiters must be safe for concurrent use (os.Stdout is, a
	// bytes.Buffer is not).
	Metrics io.Writer
	// LogOutput receives the JSON log lines, at LOG_LEVEL; nil is os.Stderr.
	LogOutput io.Writer
}

// Limiter is the middleware: Handler limits the requests of a handler. It is safe for
// concurrent use; make one per process with New and Close it (or Shutdown it, within a
// deadline) when done. The zero
// Limiter has no Redis: its Handler answers every request 503, as a limiter failing
// closed, and its Settle, Cancel and Release fail with an error that says so.
type Limiter struct {
	authorizer *authorizer.Handler
	proxies    proxies
	flush      func() // writes the metrics that wait, and logs the events' failures unlogged
	close      func()
	closeOnce  *sync.Once // nil in the zero Limiter
	inFlight   *inFlight  // the calls on Redis, and the leases next holds, for Close; nil in the zero Limiter
}

// New returns the Limiter that opts describe. Its error names the option (or the
// environment variable) to fix; the configuration is checked before Redis is tried,
// and an unreachable Redis is no error: decisions follow the failure policy until it
// answers.
func New(opts Options) (*Limiter, error) {
	ps, err := parseProxies(opts.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("middleware: TrustedProxies: %w", err)
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	} else if err := settings.CheckDimensionValue(opts.Name); err != nil {
		return nil, fmt.Errorf("middleware: Name: %w", err)
	}
	if opts.Metrics == nil {
		opts.Metrics = os.Stdout
	}
	if opts.LogOutput == nil {
		opts.LogOutput = os.Stderr
	}
	metrics, logOut := oneAtATime(opts.Metrics, opts.LogOutput)
	h, flush, closeConn, err := app.NewAuthorizer(opts.Name, opts.getenv(), metrics, logOut)
	if err != nil {
		return nil, fmt.Errorf("middleware: %w", opts.setBy(err))
	}
	return &Limiter{authorizer: h, proxies: ps, flush: flush, close: closeConn, closeOnce: new(sync.Once), inFlight: newInFlight()}, nil
}

// oneAtATime returns metrics and logs, writing under one lock when they are one writer:
// each is written under a lock of its own, and one writer given for both (a test's
// bytes.Buffer) would otherwise be written by two goroutines at once. Two writers stay
// apart, so that a stdout that blocks holds up no log line.
func oneAtATime(metrics, logs io.Writer) (io.Writer, io.Writer) {
	t := reflect.TypeOf(metrics)
	if t != reflect.TypeOf(logs) || !t.Comparable() || metrics != logs { // != of one uncomparable type would panic
		return metrics, logs
	}
	w := &lockedWriter{w: metrics}
	return w, w
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// standIn is an Options field that, set, stands in for a variable.
type standIn struct {
	field, variable, value string
}

// standIns are the fields of o that stand in for a variable, with their values.
func (o Options) standIns() []standIn {
	return []standIn{
		{"RedisAddr", settings.EnvRedisAddr, o.RedisAddr},
		{"KeyHeader", settings.EnvAPIKeyHeader, o.KeyHeader},
		{"Config", settings.EnvConfigInline, o.Config},
		{"RegistryTable", settings.EnvRegistryTable, o.RegistryTable},
	}
}

// setBy returns err, an error of the settings, naming the field of o that set the
// variable it is about in place of the variable ("KeyHeader (in place of
// API_KEY_HEADER): ..." for "API_KEY_HEADER: ...", `RegistryTable "x" (in place of
// REGISTRY_TABLE): ...` for `REGISTRY_TABLE="x": ...`), for a caller who set the field
// and never the variable; err itself when no field set it. The settings' errors start
// with the variable's name, after "settings: " for some, then ": ", " " or its value
// after "=".
func (o Options) setBy(err error) error {
	msg := strings.TrimPrefix(err.Error(), "settings: ")
	for _, s := range o.standIns() {
		rest, ok := strings.CutPrefix(msg, s.variable)
		if s.value == "" || !ok {
			continue
		}
		field := s.field
		if r, ok := strings.CutPrefix(rest, "="+strconv.Quote(s.value)); ok {
			field, rest = field+" "+strconv.Quote(s.value), r
		} else if r, ok := strings.CutPrefix(rest, "="+s.value); ok {
			field, rest = field+" "+strconv.Quote(s.value), r
		}
		if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ") {
			return &optionError{msg: field + " (in place of " + s.variable + ")" + rest, err: err}
		}
	}
	return err
}

// optionError is an error of the settings told as one of the option that set the
// variable: errors.Is and errors.As find what err wraps.
type optionError struct {
	msg string
	err error
}

func (e *optionError) Error() string { return e.msg }

// Unwrap returns the settings' error.
func (e *optionError) Unwrap() error { return e.err }

// getenv returns Getenv (or os.Getenv) with the settings opts sets in place of their
// variables.
func (o Options) getenv() func(string) string {
	base := o.Getenv
	if base == nil {
		base = os.Getenv
	}
	set := make(map[string]string)
	for _, s := range o.standIns() {
		set[s.variable] = s.value
	}
	return func(name string) string {
		if v := set[name]; v != "" {
			return v
		}
		if name == settings.EnvConfigFile && o.Config != "" {
			return "" // the document given wins over a file named in the environment
		}
		return base(name)
	}
}

// Close waits for the decisions, settles and releases that are asking Redis (each
// within REDIS_TIMEOUT_MS, and REGISTRY_TIMEOUT_MS for a key's registry read), so that each is made whole, its lease held and its metrics
// counted; returns the leases of the requests that next still serves; then writes the
// metrics that wait, logs the failures of events and of registry reads that their
// once-a-minute lines left unsaid, and closes the connection to Redis. A request whose decision Close waited for
// is answered as Redis decided it. Any that Handler gets once Close has begun are
// answered 503 with Retry-After: 1, as the zero Limiter answers, whatever FAIL_MODE: a
// closed Limiter decides nothing and counts nothing, and failing open would let every
// request through unlimited and unseen. Settle, Cancel and Release called once Close has
// begun fail with ErrClosed. The leases of the requests that next still serves (a stream
// the shutdown's deadline did not wait for, which the process's end cuts) are returned,
// so that they do not hold their concurrency rules' slots until their route's ttlMs with
// no request left in flight: one still served after Close no longer counts, as past its
// ttlMs. Close again, or at once from another goroutine, returns when the first has
// done, and does nothing more. With Redis silent (a network that dropped the
// connection), Close takes up to REDIS_TIMEOUT_MS for the calls it waits for, as long
// again for the leases it returns, and about a second more for the connection's close,
// which comes after the metrics are written: about a second in all at the defaults,
// two minutes at the largest REDIS_TIMEOUT_MS. Shutdown bounds it by a deadline of the
// caller's.
func (l *Limiter) Close() {
	if l.closeOnce == nil { // the zero Limiter: nothing to close
		return
	}
	l.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, held := range l.inFlight.close() { // at once: each within REDIS_TIMEOUT_MS
			wg.Go(func() { l.release(context.Background(), held) })
		}
		wg.Wait()
		l.close()
	})
}

// Shutdown is Close within ctx, as http.Server.Shutdown is the server's shutdown: it
// does what Close does and returns nil once done, or, when ctx ends first, writes the
// metrics that wait (every decision's made so far: Close writes them only once the calls
// it waits for have ended and the leases are returned), logs the events' failures not
// logged yet, and returns ctx's error. What is left goes on in the background, within
// Close's own bounds, and writes the metrics of the calls that end meanwhile unless the
// process has ended; Close, or Shutdown again, waits for it. Give it what the process
// has left before it is killed: a container's stop timeout (ECS, App Runner and
// Kubernetes wait 30 s by default) less the server's shutdown, or, in a Lambda
// function, somewhat less than the 500 ms from SIGTERM to SIGKILL. Shutdown begins
// Close at once, in a goroutine of its own: requests, settles and releases that come
// once it has begun are answered as after Close. The zero Limiter has nothing to shut
// down: nil.
func (l *Limiter) Shutdown(ctx context.Context) error {
	if l.closeOnce == nil {
		return nil
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		l.Close()
	}()
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-closed: // done as ctx ended
		return nil
	default:
	}
	l.flush()
	return ctx.Err()
}

// ErrClosed is the error of Settle, Cancel and Release called once Close has begun:
// trying again will not help.
var ErrClosed = errors.New("middleware: the Limiter is closed")

// ErrUnavailable is wrapped by the error of Settle, Cancel and Release when Redis (or
// the key registry) could not answer, whatever FAIL_MODE: the reservation is not
// settled (it stays charged at its estimate) or the lease not released (it frees
// itself at its route's ttlMs); trying again may succeed. It is the authorizer's own
// value, so errors.Is finds it in an error of either.
var ErrUnavailable = authorizer.ErrUnavailable

// errZeroLimiter is the error of a call that needs Redis, on the zero Limiter.
var errZeroLimiter = errors.New("middleware: the zero Limiter has no Redis: make a Limiter with New")

// Handler returns next limited: each request is decided before next sees it, and
// answered by the limiter when it may not proceed (429, 401 or 503). The rate-limit
// headers of the request next gets are the limiter's, as the REST API's HTTP
// integration maps them: any RateLimit, RateLimit-Policy or X-RateLimit-* header the
// client sent, in any spelling a backend reads as one of those (see
// ratelimitheaders.SameName), is replaced or removed, so that next, and an upstream it
// proxies to, never takes the client's for the limiter's. The rate-limit
// headers of next's answer are the limiter's: any RateLimit, RateLimit-Policy or
// X-RateLimit-* header next sets (an upstream's it proxies) is replaced or removed as the
// answer's header is written. They are named as the ratelimitheaders constants spell
// them, as API Gateway does, not in http.Header's canonical form, and so are the
// request's X-RateLimit-Reservation and X-RateLimit-Lease: in the process (next, an
// outer handler, an httptest.ResponseRecorder), read them as
// h[ratelimitheaders.HeaderRemaining], which h.Get does not find. The lease a request
// holds (a concurrency rule's) is released when next returns, or as a panic of next
// passes (which goes on up), unless next released it before (Release), or Release
// answered that it cannot be (a conflict: a reload took the route's concurrency rule,
// and the lease frees itself): a request is in flight while next serves it, for
// its route's ttlMs at most (a lease then frees itself, its handler still running or
// not: give a streaming route a ttlMs above its longest stream). A reservation next did
// not settle stays charged at its estimate. The Limiter's Settle, Cancel and Release
// find what it handed the request in the request's context, not in those headers alone:
// another Limiter's Handler inside this one (one per route, say, behind one per
// service) replaces them with its own, and each Limiter still settles and releases its
// own. A request whose client hangs up, or whose
// context's deadline passes, while it is decided is decided all the same, within
// REDIS_TIMEOUT_MS. A nil next panics, as http.Handle's does: it is no handler (pass
// http.DefaultServeMux for that one).
func (l *Limiter) Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("middleware: Limiter.Handler(nil): want the service's http.Handler (nil is not http.DefaultServeMux here: pass it)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header == nil { // a request built by hand: one without headers
			r = r.WithContext(r.Context()) // a copy, with a Header of its own to write to
			r.Header = make(http.Header)
		}
		o, lease, err := l.decide(r)
		switch {
		case errors.Is(err, errClosing): // nothing to decide with, nor to count in
			writeUnavailable(w)
			return
		case errors.Is(err, authorizer.ErrUnauthorized):
			writeJSON(w, http.StatusUnauthorized, unauthorizedBody)
			return
		case err != nil: // unavailable, failing closed, or a request that can never be decided
			writeUnavailable(w)
			return
		}
		ac := l.authorizer.Context(o) // the authorizer context
		ratelimitheaders.SetHeader(w.Header(), ac)
		if !o.Result.Allowed {
			writeJSON(w, http.StatusTooManyRequests, limitedBody(ac))
			return
		}
		ratelimitheaders.SetHeader(r.Header, ac)      // the decision's figures, as the gateway's integration maps them
		ratelimitheaders.SetHeldHeaders(r.Header, ac) // a route's reservation, for next to settle
		aw := &answerWriter{ResponseWriter: w, context: ac}
		h := &held{reservation: o.Result.Reservation}
		r = r.WithContext(context.WithValue(r.Context(), heldKey{l}, h))
		if lease == nil {
			next.ServeHTTP(aw, r)
			aw.setHeaders() // next wrote nothing: the server writes the header as it is
			return
		}
		h.lease = lease
		defer func() { // next returned or panicked: the request is no longer in flight
			if !l.inFlight.begin() { // Close has begun: it returns the lease
				return
			}
			defer l.inFlight.end()
			l.inFlight.remove(lease)
			if !lease.released.Load() {
				l.release(r.Context(), lease)
			}
		}()
		next.ServeHTTP(aw, r)
		aw.setHeaders()
	})
}

// errClosing is decide's error once Close has begun (or on the zero Limiter).
var errClosing = errors.New("middleware: closed")

// decide decides r, as a call on Redis that Close waits for, and returns the lease it
// acquired (nil when none), in flight for Close to return until Handler removes it; its
// error is errClosing once Close has begun, when it decides nothing.
func (l *Limiter) decide(r *http.Request) (authorizer.Outcome, *heldLease, error) {
	if l.authorizer == nil || !l.inFlight.begin() {
		return authorizer.Outcome{}, nil, errClosing
	}
	defer l.inFlight.end()
	// The request's values reach the decision, not its cancellation or its deadline
	// (an http.TimeoutHandler's): once asked, Redis may take the tokens, so the decision
	// is made whole, within REDIS_TIMEOUT_MS, and counted as what it was.
	o, err := l.authorizer.Authorize(context.WithoutCancel(r.Context()), l.call(r))
	if err != nil || !o.Result.Allowed || o.Result.Lease == "" {
		return o, nil, err
	}
	lease := &heldLease{id: o.Result.Lease}
	l.inFlight.add(lease) // before the call ends: a Close waiting for it returns the lease
	return o, lease, nil
}

// call is what r asks the authorizer: every copy of the API key header (copies joined
// by commas, which HTTP takes as the copies apart, as an HTTP API's), the source
// address, the method and the path as sent.
func (l *Limiter) call(r *http.Request) authorizer.Call {
	c := authorizer.Call{SourceIP: l.proxies.source(r), Method: r.Method, Path: r.URL.EscapedPath()}
	for name, values := range r.Header {
		if l.authorizer.Identities.IsKeyHeader(name) {
			for _, v := range values {
				c.Keys.Add(v)
			}
		}
	}
	c.Keys.Unjoin()
	return c
}

// Settle settles the reservation that r carries (on a route whose configuration says
// reserve: the Limiter reserved that estimate and handed the id to the next handler in
// ratelimitheaders.HeaderReservation, and in r's context, where another Limiter's
// Handler inside this one, which replaces the header, leaves it; a request that did not
// come through this Limiter's Handler is read from the header) at actual tokens, the
// work's actual cost: what the estimate took beyond it goes back to every rule, or the
// rest is taken (a bucket may owe up to its capacity). Settling again answers the first
// outcome. Its error is
// ratelimitheaders.ErrNoReservation when r carries none; wraps bucketgate.ErrConflict
// for an id the limiter did not make, or whose lone key was revoked since, or whose
// account is no longer active (a key of an active account revoked or moved since is
// settled under that account's plan), or whose route is gone or has none of its rules
// left (it stays charged at its estimate), and bucketgate.ErrInvalid for an actual below 0 or above
// bucketgate.MaxSettle, whether or not r carries a reservation (as ErrConflict does:
// neither comes right by trying again); is ErrClosed once Close has begun (nor does
// it); or wraps ErrUnavailable when Redis (or the registry) could not answer: try
// again. It is the one call a service makes once it knows what the work cost, as a
// backend behind API Gateway makes checkclient's SettleRequest. ctx's values reach the call, its
// cancellation and deadline do not: a request whose client hung up (r.Context()
// canceled) is settled all the same, within REDIS_TIMEOUT_MS, never left charged at its
// estimate; Cancel and Release likewise.
func (l *Limiter) Settle(ctx context.Context, r *http.Request, actual int64) (bucketgate.Decision, error) {
	if actual < 0 || actual > bucketgate.MaxSettle { // named as the caller passed it, whatever r holds
		return bucketgate.Decision{}, fmt.Errorf("middleware: %w: actual %d: want the tokens the work used, 0 to %d", bucketgate.ErrInvalid, actual, int64(bucketgate.MaxSettle))
	}
	return l.settle(ctx, r, bucketgate.OpSettle, actual)
}

// Cancel settles the reservation that r carries at 0, every token of its estimate back,
// as Settle does: for work that did not happen. Its errors are Settle's, ErrUnavailable
// among them.
func (l *Limiter) Cancel(ctx context.Context, r *http.Request) (bucketgate.Decision, error) {
	return l.settle(ctx, r, bucketgate.OpCancel, 0)
}

// Release returns the lease that r carries (a request with a concurrency rule: the
// Limiter acquired it and handed its id to the next handler in
// ratelimitheaders.HeaderLease), for work that is done before next returns (Handler
// releases it then otherwise); releasing again changes nothing (Decision.Released
// false). Its error is ratelimitheaders.ErrNoLease when r carries none, and else as
// Settle's: it wraps ErrUnavailable when Redis could not release the lease, which then
// frees itself at its route's ttlMs.
func (l *Limiter) Release(ctx context.Context, r *http.Request) (bucketgate.Decision, error) {
	return l.settle(ctx, r, bucketgate.OpRelease, 0)
}

// settle settles r's reservation by op at actual, or releases its lease (OpRelease).
func (l *Limiter) settle(ctx context.Context, r *http.Request, op bucketgate.Op, actual int64) (bucketgate.Decision, error) {
	h, decided := r.Context().Value(heldKey{l}).(*held)
	if !decided { // a request that did not come through l's Handler: what its headers carry
		h = &held{reservation: ratelimitheaders.Reservation(r)}
		if id := ratelimitheaders.Lease(r); id != "" {
			h.lease = &heldLease{id: id}
		}
	}
	id, none := h.reservation, ratelimitheaders.ErrNoReservation
	if op == bucketgate.OpRelease {
		id, none = "", ratelimitheaders.ErrNoLease
		if h.lease != nil {
			id = h.lease.id
		}
	}
	if id == "" {
		return bucketgate.Decision{}, none
	}
	if l.authorizer == nil {
		return bucketgate.Decision{}, errZeroLimiter
	}
	if !l.inFlight.begin() {
		return bucketgate.Decision{}, ErrClosed
	}
	defer l.inFlight.end()
	res, err := l.authorizer.Settle(context.WithoutCancel(ctx), id, op, actual) // the client may be gone; the work is done
	// A release that Redis answered, or that can never be (a conflict: a reload took the
	// route's concurrency rule), is the last: Handler does not try it again.
	final := err == nil && res.Reason != bucketgate.ReasonUnavailable && res.Reason != bucketgate.ReasonDegraded || errors.Is(err, bucketgate.ErrInvalid)
	if op == bucketgate.OpRelease && final && h.lease != nil {
		h.lease.released.Store(true)
	}
	if err != nil {
		return bucketgate.Decision{}, fmt.Errorf("middleware: %w", err)
	}
	return res.Decision, nil
}
