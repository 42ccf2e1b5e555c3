// Package benchreport measures bucketgate against its limits and its peers on a real
// redis-server and writes BENCHMARKS.md: Redis-side cost per decision (from INFO
// commandstats), throughput against redis-benchmark, client cost from the go test
// benchmarks of internal/bucket, a deny-cache flood, and a PNG plot of a flood.
//
// `make bench` runs it through TestReport, which starts its own redis-server with
// internal/redistest; nothing here runs during `make test`.
package benchreport
