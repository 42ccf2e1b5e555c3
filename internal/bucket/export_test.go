package bucket

import "time"

// Clock makes a Limiter read the time of its secret's reads (SecretRecheck,
// RefusedRecheck, keptFor) from now: a test's clock, in place of time.Now.
func Clock(now func() time.Time) Option { return func(l *Limiter) { l.now = now } }

// KeptFor is keptFor, for the tests: how long a Limiter keeps a secret it no longer
// signs with.
var KeptFor = keptFor
