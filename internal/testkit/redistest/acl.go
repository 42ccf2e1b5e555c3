package redistest

import (
	"context"
	"strings"
)

// ACLRefused returns what this server's ACL LOG says it refused, oldest last as the log
// lists them: each entry's object, a command (a subcommand as "client|setinfo") or a key.
func (s *Server) ACLRefused(ctx context.Context) ([]string, error) {
	log, err := s.Command(ctx, "ACL", "LOG")
	if err != nil {
		return nil, err
	}
	var objects []string
	lines := strings.Split(log, "\n")
	for i, line := range lines[:max(len(lines)-1, 0)] {
		if line == "object" {
			objects = append(objects, lines[i+1])
		}
	}
	return objects, nil
}
