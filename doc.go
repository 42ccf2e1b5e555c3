// Package bucketgate is the vocabulary of bucketgate, a distributed token-bucket rate
// limiter: rules, requests and the operations they ask for, decisions and their
// reasons, the identities whose buckets a request spends (with the digest that stands
// for an API key everywhere but the caller's terminal), and plans. It depends on the
// standard library alone, so that every part of bucketgate, and any Go program, can
// speak it.
//
// The engine that decides requests on Redis is internal; Go services limit their own
// HTTP requests with package middleware, and call the check function with package
// checkclient: docs/library.md and docs/check.md are their guides.
package bucketgate
