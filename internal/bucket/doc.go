// Package bucket is bucketgate's decision engine: token-bucket rules, the Redis key of an
// identity, one atomic decision per request over rueidis, and a pure Go reference model
// of the same math.
//
// A request is allowed when every one of its rules holds at least cost tokens; then cost
// is taken from every rule, otherwise nothing is written. Time is the Redis server's
// TIME, read inside the script. The engine returns data and never logs.
package bucket
