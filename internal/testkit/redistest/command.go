package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// Command sends one command to this server alone (never following cluster redirects)
// on a fresh connection and returns its reply as text: a string or number as itself,
// an array as one element per line. It speaks RESP2, as redis-cli does, so that a hash
// (HGETALL) is an array of its fields and values in the server's order, not a RESP3
// map, which has no order.
func (s *Server) Command(ctx context.Context, args ...string) (string, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{s.Addr},
		ForceSingleClient: true,
		DisableCache:      true,
		AlwaysRESP2:       true,
		TLSConfig:         s.tlsConfig,
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.Addr, err)
	}
	defer c.Close()
	msg, err := c.Do(ctx, c.B().Arbitrary(args...).Build()).ToMessage()
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", s.Addr, strings.Join(args, " "), err)
	}
	return text(msg), nil
}

// text renders a reply: a string or number as itself, an array as its elements' texts
// on separate lines.
func text(msg rueidis.RedisMessage) string {
	if v, err := msg.ToString(); err == nil {
		return v
	}
	if v, err := msg.ToInt64(); err == nil {
		return strconv.FormatInt(v, 10)
	}
	elems, _ := msg.ToArray()
	lines := make([]string, len(elems))
	for i, e := range elems {
		lines[i] = text(e)
	}
	return strings.Join(lines, "\n")
}

// command is Command for a command whose reply is only OK or an error.
func (s *Server) command(ctx context.Context, args ...string) error {
	_, err := s.Command(ctx, args...)
	return err
}

// port returns the port of s.Addr.
func (s *Server) port() string { return s.Addr[strings.LastIndexByte(s.Addr, ':')+1:] }
