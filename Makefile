# bucketgate: every target runs on a fresh machine with Go; the real-Redis suites also
# need redis-server on PATH (apt-get install redis-server).
GO ?= go
TEST_FLAGS ?= -count=1 -timeout 10m

.PHONY: test vet
test: vet ## every test: unit (miniredis), real redis-server suites, fuzz seeds
	$(GO) test $(TEST_FLAGS) ./...

vet:
	$(GO) vet ./...

# bench: the performance report (issue 7). Every part starts its own redis-server on a
# free loopback port (redis-server and redis-benchmark must be installed: apt-get install
# redis-server). BenchmarkClientCost runs five times, one run at a time, so that its two
# halves take turns; then TestReport measures the rest and writes BENCHMARKS.md and its
# plot. A few minutes on 2 CPUs.
.PHONY: bench
bench:
	@out=$$(mktemp) && trap 'rm -f "$$out"' EXIT && \
	for i in 1 2 3 4 5; do \
		BUCKETGATE_REQUIRE_REDIS=1 $(GO) test -run '^$$' -bench ClientCost -benchmem -benchtime 20000x -count 1 ./internal/bucket >>"$$out" || { cat "$$out"; exit 1; }; \
	done && grep '^Benchmark' "$$out" && \
	BUCKETGATE_REQUIRE_REDIS=1 $(GO) test -count=1 -timeout 10m -run '^TestReport$$' -v ./internal/benchreport \
		-args -report="$(CURDIR)/BENCHMARKS.md" -gobench="$$out"
