package eventbus

import "time"

// LoggedOf returns when s last logged its failures, for the tests.
func LoggedOf(s *Sender) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logged
}
