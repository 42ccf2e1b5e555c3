// Package registrytest holds a registry.Source in memory, for the tests of the registry's
// cache and of the handlers: records by identity, configuration items
// (registry.ConfigSource), invalid items, failures on demand, and a count of reads. The
// real table is tested against dynalite (internal/testkit/dynalite).
package registrytest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bucketgate/bucketgate/internal/registry"
)

// Source is a registry.Source in memory. It is safe for concurrent use. The zero Source
// is not; use New.
type Source struct {
	// Gate, when not nil, holds every read until it is closed, or until the read's
	// context ends: then the read fails with the context's error, as a DynamoDB call
	// does.
	Gate chan struct{}

	mu      sync.Mutex
	records map[string]registry.Record
	configs map[string]registry.StoredConfig
	invalid map[string]*registry.RecordError
	err     error
	failing string // the prefix of the ids whose reads fail with err ("": every id)
	reads   int
	held    int
}

// New returns a Source holding records.
func New(records ...registry.Record) *Source {
	s := &Source{records: map[string]registry.Record{}, configs: map[string]registry.StoredConfig{}, invalid: map[string]*registry.RecordError{}}
	for _, r := range records {
		s.records[r.ID] = r
	}
	return s
}

// Get returns the record of id: an error set by Fail (or FailPrefix), the *RecordError set by
// PutInvalid, or the record set by New or Put; or ctx's error when ctx ends while Gate
// holds it.
func (s *Source) Get(ctx context.Context, id string) (registry.Record, bool, error) {
	err := s.hold(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if err != nil {
		return registry.Record{}, false, err
	}
	if s.err != nil && strings.HasPrefix(id, s.failing) {
		return registry.Record{}, false, s.err
	}
	if e, ok := s.invalid[id]; ok {
		return registry.Record{ID: id}, true, e
	}
	r, ok := s.records[id]
	return r, ok, nil
}

// GetConfig returns the configuration item id as Get returns a record: an error set by
// Fail, the *RecordError set by PutInvalid (with the item set by PutConfig, if any), or
// the item set by PutConfig.
func (s *Source) GetConfig(ctx context.Context, id string) (registry.StoredConfig, bool, error) {
	err := s.hold(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if err != nil {
		return registry.StoredConfig{}, false, err
	}
	if s.err != nil && strings.HasPrefix(id, s.failing) {
		return registry.StoredConfig{}, false, s.err
	}
	c, ok := s.configs[id]
	if e, bad := s.invalid[id]; bad {
		return c, true, e
	}
	return c, ok, nil
}

// PutConfig sets the configuration item c.ID.
func (s *Source) PutConfig(c registry.StoredConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configs[c.ID] = c
}

// DeleteConfig removes the configuration item id.
func (s *Source) DeleteConfig(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.configs, id)
}

// hold waits for Gate, if any, to open; it returns ctx's error when ctx ends first.
func (s *Source) hold(ctx context.Context) error {
	if s.Gate == nil {
		return nil
	}
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
	}()
	select {
	case <-s.Gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Put sets the record of r.ID.
func (s *Source) Put(r registry.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[r.ID] = r
}

// PutInvalid makes every read of id return e, as for an item that cannot be used.
func (s *Source) PutInvalid(id string, e *registry.RecordError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalid[id] = e
}

// Fail makes every read fail with err from now on; nil ends the failure.
func (s *Source) Fail(err error) {
	s.FailPrefix("", err)
}

// FailPrefix makes every read of an id with prefix (registry.AccountItemPrefix: the
// accounts' items) fail with err from now on, the others answered; nil ends the
// failure.
func (s *Source) FailPrefix(prefix string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.failing = err, prefix
}

// Held returns how many reads Gate holds now.
func (s *Source) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// heldWithin bounds how long AwaitHeld waits: far longer than a read takes to reach
// Gate on a loaded machine.
const heldWithin = 10 * time.Second

// AwaitHeld waits until Gate holds n reads or more, and returns an error saying how many
// it holds if that takes longer than 10 s: a read that never comes fails its test then,
// rather than hanging it until go test's timeout.
func (s *Source) AwaitHeld(n int) error {
	for deadline := time.Now().Add(heldWithin); ; time.Sleep(time.Millisecond) {
		held := s.Held()
		if held >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("registrytest: %d reads held after %v, want %d", held, heldWithin, n)
		}
	}
}

// Reads returns how many reads were made.
func (s *Source) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}
