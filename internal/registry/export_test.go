package registry

import (
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
)

// HoldsOf returns how many holds after failed reads c keeps, for the tests.
func HoldsOf(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.holds)
}

// HoldOf returns when c's hold of id ends (the zero Time for none), for the tests.
func HoldOf(c *Cache, id string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds[id]
}

// ReadTimesOf returns when l last read its configuration, and when it may read it
// again after a failed read, for the tests.
func ReadTimesOf(l *Live) (readAt, retryAt time.Time) {
	s := l.state.Load()
	return s.readAt, s.retryAt
}

// Release has c let go of every configuration but cfg, as Live does at a change, for
// the tests.
func Release(c *Cache, cfg *config.Config) { c.release(cfg) }
