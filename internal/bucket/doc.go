// Package bucket is bucketgate's decision engine over the root package's vocabulary
// (bucketgate.Rule, Request, Decision): the Redis key of an identity, one atomic script
// call per request over rueidis, strict decoding of the script's replies, and a pure Go
// reference model of the same math.
//
// A request is allowed when every one of its rules holds at least cost tokens; then cost
// is taken from every rule, otherwise nothing is written. Time is the Redis server's
// TIME, read inside the script. The engine returns data and never logs.
package bucket
