package bucket

import (
	"math"
	"time"
)

// Model is the reference model: the same math as bucket.lua in plain Go, with time
// passed in, keeping state in memory. Tests hold the script to it. It is not safe for
// concurrent use. The zero Model is not ready; use NewModel.
type Model struct {
	keys map[string]*modelKey
}

// ModelBucket is one rule's state as the script stores it: Tokens (a double) as of
// Stamp (microseconds of Redis time).
type ModelBucket struct {
	Tokens float64
	Stamp  int64
}

type modelKey struct {
	buckets map[string]ModelBucket
	expires int64 // milliseconds: when every bucket written is full again, the latest
}

// NewModel returns an empty Model: every bucket starts full.
func NewModel() *Model { return &Model{keys: map[string]*modelKey{}} }

// Decide decides q at now exactly as the script would, and records the writes. q must
// be valid (see Request.Validate).
func (m *Model) Decide(now time.Time, q Request) Decision {
	nowUS := timeToMicros(now)
	k := m.keys[Key(q.Identity)]
	cost := float64(q.Cost)
	tokens := make([]float64, len(q.Rules))
	allowed := true
	for i, r := range q.Rules {
		tokens[i] = float64(r.Capacity)
		if k != nil {
			if b, ok := k.buckets[r.Name]; ok {
				tokens[i] = refill(b, r, nowUS)
			}
		}
		if tokens[i] < cost {
			allowed = false
		}
	}
	binding, waitRule := 0, -1
	var wait float64
	if allowed {
		for i, r := range q.Rules {
			tokens[i] -= cost
			if tokens[i] < tokens[binding] {
				binding = i
			}
			if tokens[i] < cost {
				if w := waitMillis(cost-tokens[i], r); w > wait {
					wait, waitRule = w, i
				}
			}
		}
	} else {
		for i, r := range q.Rules {
			if tokens[i] < cost {
				if w := waitMillis(cost-tokens[i], r); w > wait {
					wait, binding = w, i
				}
			}
		}
	}
	fewest, reset := tokens[0], 0.0
	for i, r := range q.Rules {
		fewest = math.Min(fewest, tokens[i])
		reset = math.Max(reset, waitMillis(float64(r.Capacity)-tokens[i], r))
	}
	if allowed && q.Cost > 0 {
		m.write(Key(q.Identity), q.Rules, tokens, nowUS, int64(math.Ceil(float64(nowUS)/1000)+reset))
	}
	return newDecision(q, allowed, binding, int64(math.Floor(fewest)), int64(wait), int64(reset), nowUS, waitRule)
}

// waitMillis is how long r takes to refill tokens, in whole milliseconds rounded up.
func waitMillis(tokens float64, r Rule) float64 {
	return math.Ceil(tokens * 1000 / r.RefillPerSecond)
}

// refill returns b's tokens at nowUS; a stamp in the future counts as now.
func refill(b ModelBucket, r Rule, nowUS int64) float64 {
	elapsed := float64(max(nowUS-b.Stamp, 0))
	level := b.Tokens + float64(elapsed*r.RefillPerSecond)/1e6
	return math.Min(level, float64(r.Capacity))
}

func (m *Model) write(key string, rules []Rule, tokens []float64, nowUS, expires int64) {
	k := m.keys[key]
	if k == nil {
		k = &modelKey{buckets: map[string]ModelBucket{}}
		m.keys[key] = k
	}
	for i, r := range rules {
		k.buckets[r.Name] = ModelBucket{Tokens: tokens[i], Stamp: nowUS}
	}
	k.expires = max(k.expires, expires)
}

// Bucket returns the stored state of identity's rule, and false when none was written.
func (m *Model) Bucket(identity, rule string) (ModelBucket, bool) {
	k := m.keys[Key(identity)]
	if k == nil {
		return ModelBucket{}, false
	}
	b, ok := k.buckets[rule]
	return b, ok
}

// SetBucket overwrites the stored state of identity's rule, as a test does to Redis to
// simulate state written under another clock.
func (m *Model) SetBucket(identity, rule string, b ModelBucket) {
	key := Key(identity)
	if m.keys[key] == nil {
		m.keys[key] = &modelKey{buckets: map[string]ModelBucket{}}
	}
	m.keys[key].buckets[rule] = b
}

// ExpiresAt returns when identity's key expires (the latest moment at which every bucket
// of a write was full again, plus ExpiryMargin), and false when nothing was written for it.
func (m *Model) ExpiresAt(identity string) (time.Time, bool) {
	k := m.keys[Key(identity)]
	if k == nil {
		return time.Time{}, false
	}
	return time.UnixMilli(k.expires).Add(ExpiryMargin), true
}
