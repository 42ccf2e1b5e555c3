package redisconn

import "time"

// WithClock makes New tell the age of IAM tokens and of the password secret's copy by
// now instead of time.Now.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }
