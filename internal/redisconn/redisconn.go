// Package redisconn builds the rueidis client for Redis or ElastiCache from Settings,
// once per execution environment: addresses and cluster mode, TLS, and AUTH with a
// password, a password from Secrets Manager, or ElastiCache IAM tokens.
//
// The connection is made lazily: a Redis that cannot be reached at init does not fail
// init. Conn.Client answers with an error until a connection attempt succeeds, and
// attempts at most once per RetryInterval.
package redisconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// Timing of connection set-up.
const (
	// ConnectTimeout bounds one connection attempt's dial and TLS handshake, and how
	// long New waits for the first attempt before it returns a client still connecting.
	ConnectTimeout = 2 * time.Second
	// SecretRecheck is how old the copy of the password secret (REDIS_PASSWORD_SECRET_ARN)
	// gets before a new connection begins reading the secret again, beside it.
	SecretRecheck = 10 * time.Second
	// InitTimeout bounds what New reads from AWS (the password secret, credentials).
	InitTimeout = 5 * time.Second
	// StallTimeout is how long a connection may leave a command or rueidis's ping
	// unanswered before it is dropped (rueidis's ConnWriteTimeout), when the decision
	// deadline (REDIS_TIMEOUT_MS) is shorter: rueidis pings a connection that has
	// received nothing for a second, so one the network dropped silently is replaced
	// within two. rueidis's own default, ten times longer, left a long-running
	// process's concurrent requests, which share the connection, failing for 11 s.
	StallTimeout = time.Second
)

// singleConnection is rueidis's PipelineMultiplex for one connection per node.
const singleConnection = -1

// ErrNoAddress is returned when no Redis address is configured.
var ErrNoAddress = errors.New("no Redis address: set " + settings.EnvRedisAddr)

// ErrNotCluster is returned when REDIS_CLUSTER=on and the server is not in cluster mode.
var ErrNotCluster = errors.New(settings.EnvCluster + "=on but the server is not in cluster mode")

// Option adjusts New for tests and unusual environments.
type Option func(*options)

type options struct {
	aws      *aws.Config
	rootCAs  *x509.CertPool
	eviction func(node, policy string, err error)
	now      func() time.Time // the clock of IAM tokens' and the password secret's ages
}

// WithAWSConfig makes New use cfg (region, credentials, endpoints) for Secrets Manager
// and IAM tokens instead of the default AWS configuration of the environment.
func WithAWSConfig(cfg aws.Config) Option { return func(o *options) { o.aws = &cfg } }

// WithRootCAs makes TLS connections trust pool instead of the system roots.
func WithRootCAs(pool *x509.CertPool) Option { return func(o *options) { o.rootCAs = pool } }

// NoEviction is the eviction policy (maxmemory_policy) under which Redis never evicts
// a key: a full cache refuses writes (bucketgate then fails closed, or open) instead of
// forgetting buckets, which would come back full.
const NoEviction = "noeviction"

// WithEvictionPolicy makes the connection read every node's eviction policy once it
// has connected, from INFO memory (which ElastiCache answers, where CONFIG GET is
// refused), and report each node's: its policy (maxmemory_policy), or the error that
// left it unknown. A policy other than NoEviction lets Redis evict keys under memory
// pressure: exhausted buckets and idle daily quotas would come back full.
func WithEvictionPolicy(report func(node, policy string, err error)) Option {
	return func(o *options) { o.eviction = report }
}

// New returns the connection for s, whose rueidis client has client-side caching off
// (ElastiCache and miniredis do not support tracking). It reads the password secret and
// signs the first IAM token now, and tries to connect for up to ConnectTimeout: a
// configuration Redis refuses (wrong password, unknown user, untrusted certificate,
// cluster mode missing) is an error, while an unreachable Redis is not: the Conn keeps
// trying, at most once per RetryInterval, and Client answers ErrNotConnected meanwhile.
func New(s settings.Settings, opts ...Option) (*Conn, error) {
	if len(s.RedisAddrs) == 0 {
		return nil, ErrNoAddress
	}
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), InitTimeout)
	defer cancel()
	co, err := clientOption(ctx, s, o)
	if err != nil {
		return nil, err
	}
	explainErr := func(err error) error { return explain(err, s, cmp.Or(co.Username, s.Username)) }
	c := newConn(func() (rueidis.Client, error) {
		cl, err := connect(co, s.Cluster)
		switch {
		case err != nil && isConfigError(err):
			return nil, explainErr(err)
		case err == nil && o.eviction != nil:
			reportEviction(cl, o.eviction)
		}
		return cl, err
	}, explainErr)
	first, cancelFirst := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancelFirst()
	if _, err := c.Client(first); err != nil && isConfigError(err) {
		c.Close()
		return nil, err
	}
	return c, nil
}

// explain says where a configuration error of a connection attempt for s, as user,
// came from: the addresses, the user, and the settings to check (hint).
func explain(err error, s settings.Settings, user string) error {
	as := ""
	if user != "" {
		as = fmt.Sprintf(" as user %q", user)
	}
	return fmt.Errorf("Redis at %s%s: %w", strings.Join(s.RedisAddrs, ","), as, hint(err, s))
}

// clientOption turns s into rueidis options, fetching what AUTH needs from AWS.
func clientOption(ctx context.Context, s settings.Settings, o options) (rueidis.ClientOption, error) {
	co := rueidis.ClientOption{
		InitAddress:       s.RedisAddrs,
		DisableCache:      true,
		ForceSingleClient: s.Cluster == settings.ClusterOff,
		Username:          s.Username,
		Password:          s.Password,
		Dialer:            net.Dialer{Timeout: ConnectTimeout},
		ConnWriteTimeout:  max(StallTimeout, s.Timeout),
		// One connection per node: a Lambda instance runs one invocation at a time,
		// ElastiCache counts connections, and a node restart then breaks one
		// connection (one failed decision), not several.
		PipelineMultiplex: singleConnection,
		// No CLIENT SETINFO: MinimalACL does not grant it, and each refusal would count
		// in the server's ACL LOG (ElastiCache: CommandAuthorizationFailures).
		ClientSetInfo: rueidis.DisableClientSetInfo,
	}
	if s.TLS {
		co.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.rootCAs}
		co.DialCtxFn = dialTLS
	}
	if s.PasswordSecretARN == "" && !s.IAMAuth {
		return co, nil
	}
	cfg, err := awsConfig(ctx, o)
	if err != nil {
		return co, err
	}
	if s.PasswordSecretARN != "" {
		auth, err := newSecretAuth(ctx, s, cfg, o.now)
		if err != nil {
			return co, err
		}
		co.Username, co.AuthCredentialsFn = auth.user, auth.credentials
		return co, nil
	}
	auth, err := newIAMAuth(ctx, s, cfg, o.now)
	if err != nil {
		return co, err
	}
	co.Username, co.Password, co.AuthCredentialsFn = "", "", auth.credentials
	return co, nil
}

// awsConfig returns the configured AWS config or the environment's default one.
func awsConfig(ctx context.Context, o options) (aws.Config, error) {
	if o.aws != nil {
		return *o.aws, nil
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}

// connect makes one rueidis client, checking cluster mode when it is required. A
// connection the server closed at once, without TLS, says to check REDIS_TLS.
func connect(co rueidis.ClientOption, mode settings.ClusterMode) (rueidis.Client, error) {
	c, err := rueidis.NewClient(co)
	if err != nil && co.TLSConfig == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return nil, fmt.Errorf("%w (the server closed the connection at the first command, as one that wants TLS does: check %s)", err, settings.EnvTLS)
	}
	if err != nil {
		return nil, err
	}
	if mode == settings.ClusterOn && c.Mode() != rueidis.ClientModeCluster {
		c.Close()
		return nil, ErrNotCluster
	}
	return c, nil
}

// reportEviction reads the eviction policy of every node c knows, in order of address,
// within ConnectTimeout, and reports each.
func reportEviction(c rueidis.Client, report func(node, policy string, err error)) {
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	nodes := c.Nodes()
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		info, err := n.Do(ctx, n.B().Info().Section("memory").Build()).ToString()
		policy := ""
		if err == nil {
			policy, err = maxmemoryPolicy(info)
		}
		report(addr, policy, err)
	}
}

// maxmemoryPolicy reads maxmemory_policy from the text of INFO memory.
func maxmemoryPolicy(info string) (string, error) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok && v != "" {
			return v, nil
		}
	}
	return "", errors.New("INFO memory says no maxmemory_policy")
}
