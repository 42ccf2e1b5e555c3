package bucket

import (
	"math"
	"time"

	"github.com/bucketgate/bucketgate"
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

// Decide does q at now exactly as the script would, and records the writes. q must
// be valid (see Request.Validate).
func (m *Model) Decide(now time.Time, q bucketgate.Request) bucketgate.Decision {
	nowUS := timeToMicros(now)
	key := Key(q.Identity)
	k := m.keys[key]
	cost, give := float64(q.Cost), 0.0
	if q.Op == bucketgate.OpRefund {
		cost, give = 0, float64(q.Cost)
	}
	tokens := make([]float64, len(q.Rules))
	allowed := true
	for i, r := range q.Rules {
		tokens[i] = float64(r.Capacity)
		if k != nil && q.Op != bucketgate.OpReset {
			if b, ok := k.buckets[r.Name]; ok {
				tokens[i] = refill(b, r, nowUS, give)
			}
		}
		if !r.Shadow && tokens[i] < cost {
			allowed = false
		}
	}
	binding, waitRule := -1, -1
	var wait float64
	var limited bucketgate.RuleSet
	for i, r := range q.Rules {
		switch {
		case r.Shadow && allowed && tokens[i] < cost:
			limited |= 1 << i // a shadow denial takes nothing
		case r.Shadow && allowed:
			tokens[i] -= cost
		case r.Shadow:
		case allowed:
			tokens[i] -= cost
			if binding < 0 || tokens[i] < tokens[binding] {
				binding = i
			}
			if tokens[i] < cost {
				if w := waitMillis(cost-tokens[i], r); w > wait {
					wait, waitRule = w, i
				}
			}
		case tokens[i] < cost:
			if w := waitMillis(cost-tokens[i], r); w > wait {
				wait, binding = w, i
			}
		}
	}
	fewest, reset, expiry := math.Inf(1), 0.0, 0.0
	for i, r := range q.Rules {
		full := waitMillis(float64(r.Capacity)-tokens[i], r)
		expiry = math.Max(expiry, full)
		if !r.Shadow {
			fewest = math.Min(fewest, tokens[i])
			reset = math.Max(reset, full)
		}
	}
	if binding < 0 { // every rule is shadow: nothing to describe
		fewest = 0
	}
	switch {
	case q.Op == bucketgate.OpReset:
		m.remove(key, q.Rules)
	case q.Op == bucketgate.OpRefund:
		m.refund(key, q.Rules, give)
	case allowed && q.Cost > 0:
		m.write(key, q.Rules, tokens, nowUS, int64(math.Ceil(float64(nowUS)/1000)+expiry))
	}
	return newDecision(q, allowed, binding, int64(math.Floor(fewest)), int64(wait), int64(reset), nowUS, waitRule, limited)
}

// waitMillis is how long r takes to refill tokens, in whole milliseconds rounded up.
func waitMillis(tokens float64, r bucketgate.Rule) float64 {
	return math.Ceil(tokens * 1000 / r.RefillPerSecond)
}

// refill returns b's tokens at nowUS with give tokens added, at most r's capacity; a
// stamp in the future counts as now.
func refill(b ModelBucket, r bucketgate.Rule, nowUS int64, give float64) float64 {
	elapsed := float64(max(nowUS-b.Stamp, 0))
	level := b.Tokens + float64(elapsed*r.RefillPerSecond)/1e6
	return math.Min(level+give, float64(r.Capacity))
}

// write stores tokens[i] for every rule as of nowUS, and lets the key live until expires
// at least.
func (m *Model) write(key string, rules []bucketgate.Rule, tokens []float64, nowUS, expires int64) {
	for i, r := range rules {
		k := m.keys[key]
		if k == nil {
			k = &modelKey{buckets: map[string]ModelBucket{}}
			m.keys[key] = k
		}
		k.buckets[r.Name] = ModelBucket{Tokens: tokens[i], Stamp: nowUS}
		k.expires = max(k.expires, expires)
	}
}

// refund adds give tokens to the stored count of every rule with state, at its stamp,
// capped at the rule's capacity unless the count holds more already: a refund never
// lowers a bucket, whatever capacity and rate its rules give. Stamps and expiry stand.
func (m *Model) refund(key string, rules []bucketgate.Rule, give float64) {
	k := m.keys[key]
	if k == nil {
		return
	}
	for _, r := range rules {
		b, ok := k.buckets[r.Name]
		if !ok {
			continue
		}
		if raised := math.Min(b.Tokens+give, float64(r.Capacity)); raised > b.Tokens {
			b.Tokens = raised
			k.buckets[r.Name] = b
		}
	}
}

// remove deletes the state of rules, and the key with its last bucket.
func (m *Model) remove(key string, rules []bucketgate.Rule) {
	k := m.keys[key]
	if k == nil {
		return
	}
	for _, r := range rules {
		delete(k.buckets, r.Name)
	}
	if len(k.buckets) == 0 {
		delete(m.keys, key)
	}
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
