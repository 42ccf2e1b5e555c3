package redistest

import (
	"context"
	"fmt"
	"strings"
)

// Dump returns every key of s with its value, whatever its type (a string, a hash, a
// sorted set with its scores), a line each: "key value".
func (s *Server) Dump(ctx context.Context) (string, error) {
	keys, err := s.Command(ctx, "KEYS", "*")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range strings.Fields(keys) {
		typ, err := s.Command(ctx, "TYPE", k)
		if err != nil {
			return "", err
		}
		read := map[string][]string{"hash": {"HGETALL", k}, "zset": {"ZRANGE", k, "0", "-1", "WITHSCORES"}, "string": {"GET", k}}[strings.TrimSpace(typ)]
		if read == nil {
			return "", fmt.Errorf("dump: %s is a %s", k, strings.TrimSpace(typ))
		}
		v, err := s.Command(ctx, read...)
		if err != nil {
			return "", err
		}
		b.WriteString(k + " " + v + "\n")
	}
	return b.String(), nil
}
