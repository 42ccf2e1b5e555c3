# bucketgate: every target runs on a fresh machine with Go; the real-server suites also
# need redis-server and valkey-server on PATH (.ci/run installs them).
GO ?= go
TEST_FLAGS ?= -count=1 -timeout 10m

# The real-server suites run once per engine: Redis OSS and Valkey, the engine
# ElastiCache creates by default. A missing engine skips them loudly (CI: fails), and
# make test says so in a SKIPPED line per missing engine after its run.
ENGINES ?= redis-server valkey-server

# make alone lists the targets and what each does (the ## comments of their rules); it
# installs and runs nothing.
.DEFAULT_GOAL := help
.PHONY: help
help: ## these targets
	@awk -F ':[^#]*## ' '/^[a-z][a-z-]*:.*## /{printf "  make %-24s %s\n", $$1, $$2}' $(firstword $(MAKEFILE_LIST))

# dynalite, the local DynamoDB of the registry's tests and of local runs: pinned by
# internal/testkit/dynalite/package-lock.json and installed there by npm ci whenever the
# lock is newer than the installed tree. Without npm a laptop goes on (the dynalite
# tests skip loudly); CI fails.
DYNALITE_DIR = internal/testkit/dynalite
DYNALITE = $(DYNALITE_DIR)/node_modules/.package-lock.json
$(DYNALITE): $(DYNALITE_DIR)/package.json $(DYNALITE_DIR)/package-lock.json
	@if command -v npm >/dev/null; then \
	  echo "npm ci --prefix $(DYNALITE_DIR)" && npm ci --ignore-scripts --no-audit --no-fund --prefix $(DYNALITE_DIR) && touch $@; \
	elif [ -n "$$CI" ]; then echo "npm is not on PATH: apt-get install nodejs npm" >&2; exit 1; \
	else echo "SKIPPING the dynalite install: npm is not on PATH (apt-get install nodejs npm); the registry's dynalite tests will skip" >&2; fi

.PHONY: test vet
test: vet $(DYNALITE) ## every test: unit (miniredis), real-server suites on each of ENGINES, fuzz seeds; then the tools' own tests
	@set -e; for engine in $(ENGINES); do \
	  echo "== go test ./... with BUCKETGATE_REDIS_SERVER=$$engine"; \
	  BUCKETGATE_REDIS_SERVER=$$engine $(GO) test $(TEST_FLAGS) ./...; \
	  if ! command -v $$engine >/dev/null; then \
	    echo "SKIPPED: $$engine is not on PATH: every real-server suite skipped under it (CI, or BUCKETGATE_REQUIRE_SERVERS=1, fails them instead)"; \
	  fi; \
	done
	cd tools && $(GO) test $(TEST_FLAGS) ./...

vet:
	@unformatted=$$(gofmt -l . | grep -v /node_modules/); if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	cd tools && $(GO) vet ./...

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## every fuzz target for FUZZTIME each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

# Local runs: no AWS account, no Docker. An embedded Redis unless REDIS_ADDR is set.
# BACKEND=URL proxies allowed requests to your own service instead of the sample backend
# (with X-Bucketgate-Secret when BUCKETGATE_BACKEND_SECRET is set).
# run builds the program and runs it, rather than go run, which exits 1 at Ctrl-C (and
# make with it) when the program stops cleanly.
PORT ?= 8080
BACKEND ?=
.PHONY: run invoke dynalite
run: ## a local API Gateway on 127.0.0.1:PORT (8080): the real authorizer, template.yaml's gateway responses, a sample backend or BACKEND=URL
	$(GO) build -o $(BIN)/bucketgate-local ./cmd/bucketgate-local && $(BIN)/bucketgate-local serve -addr 127.0.0.1:$(PORT)$(if $(BACKEND), -backend '$(BACKEND)')

# dynalite: a local DynamoDB for a registry table (docs/keys.md: a session with a local table).
DYNALITE_PORT ?= 8000
dynalite: $(DYNALITE) ## a local DynamoDB (dynalite, in memory) on 127.0.0.1:DYNALITE_PORT (8000) for REGISTRY_TABLE
	@command -v node >/dev/null && [ -f $(DYNALITE) ] || { echo "make dynalite needs Node.js and npm (apt-get install nodejs npm): npm ci installs dynalite, node runs it" >&2; exit 1; }
	node $(DYNALITE_DIR)/node_modules/dynalite/cli.js --host 127.0.0.1 --port $(DYNALITE_PORT) --createTableMs 0

invoke: ## one sample event through its function: make invoke EVENT=events/check-single.json [FUNCTION=check]
	$(if $(EVENT),,$(error EVENT is not set: make invoke EVENT=events/check-single.json))$(GO) run ./cmd/bucketgate-local invoke $(if $(FUNCTION),-function $(FUNCTION) )$(EVENT)

# The version every binary reports (internal/version): VERSION=... if given, else git
# describe of this Makefile's own checkout. `sam build` runs this Makefile from a copy of
# the sources without .git, so git asks the Makefile's directory, not the current one.
# Outside a git checkout it is empty, and the binaries report their module's version
# from its build info instead.
MAKEFILE_DIR := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git -C '$(MAKEFILE_DIR)' describe --tags --always --dirty 2>/dev/null)
endif
GO_LDFLAGS = -s -w$(if $(VERSION), -X github.com/bucketgate/bucketgate/internal/version.stamp=$(VERSION))

# Lambda builds. `sam build` runs build-<LogicalId> (template.yaml: BuildMethod makefile)
# with ARTIFACTS_DIR set; the provided.al2023 runtime runs the file named bootstrap.
# LAMBDA_ARCH matches the template's Architectures; tests build for the host with it.
LAMBDA_ARCH ?= arm64
LAMBDA_BUILD = CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_ARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='$(GO_LDFLAGS)'
CHECK_ARTIFACTS_DIR = $(if $(ARTIFACTS_DIR),,$(error ARTIFACTS_DIR is not set: sam build sets it; for a local build run make build))

.PHONY: build build-AuthorizerFunction build-CheckFunction build-OperatorFunction cli clean lint
build-AuthorizerFunction:
	$(CHECK_ARTIFACTS_DIR)$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/authorizer

build-CheckFunction:
	$(CHECK_ARTIFACTS_DIR)$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/check

# The operator function is the check function's code, deployed a second time with the
# operator's operations enabled (the check function refuses them: OPERATOR_FUNCTION).
build-OperatorFunction:
	$(CHECK_ARTIFACTS_DIR)$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/check

# BIN is where make build and make cli put the binaries. build runs the recipes in this
# directory with paths relative to it, so that what it prints is the same on every
# machine (docs/deploy.md shows it; a test holds it).
BIN ?= bin
build: cli ## both Lambda binaries, bin/authorizer/bootstrap and bin/check/bootstrap, and the CLI
	$(MAKE) --no-print-directory build-AuthorizerFunction ARTIFACTS_DIR=$(BIN)/authorizer VERSION=$(VERSION)
	$(MAKE) --no-print-directory build-CheckFunction ARTIFACTS_DIR=$(BIN)/check VERSION=$(VERSION)

cli: ## the operator's CLI for this machine: bin/bucketgate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(GO_LDFLAGS)' -o $(BIN)/bucketgate ./cmd/bucketgate

clean: ## remove bin/ and .aws-sam/
	rm -rf bin .aws-sam

lint: ## cfn-lint on every template: template.yaml and examples/ (SAM transform included)
	cfn-lint template.yaml examples/*.yaml

# The tools (make bench, bench-instructions, stress) are a Go module of their own in
# tools/, so that the product's go.mod lists only what the functions, the CLI and their
# tests need; they import the product's packages by path.

# bench: the performance report. First make bench-instructions' callgrind count (item 1's
# headline, a few minutes under valgrind: needs valgrind); then every part starts its own
# redis-server on a free loopback port (redis-server and redis-benchmark must be
# installed: apt-get install redis-server). BenchmarkClientCost runs five times, one run
# at a time, so that its two halves take turns, BenchmarkHandlerOverhead
# (internal/authorizer) five times, and BenchmarkCacheEntryBytes (internal/registry: the
# bytes of a registry cache entry, with and without rules of its own) once; then TestReport measures the rest (cold starts, the
# key registry's reads, the end-to-end invocations and the log bytes per invocation against its own dynalite) and
# writes BENCHMARKS.md and its plot. About ten minutes on 2 CPUs.
.PHONY: bench
bench: $(DYNALITE) ## the performance report, BENCHMARKS.md (about ten minutes; needs valgrind and redis-benchmark)
	@out=$$(mktemp) && insn=$$(mktemp) && trap 'rm -f "$$out" "$$insn"' EXIT && \
	bash tools/benchreport/instructions/instructions.sh >"$$insn" || { cat "$$insn"; exit 1; }; \
	cat "$$insn" && \
	for i in 1 2 3 4 5; do \
		BUCKETGATE_REQUIRE_SERVERS=1 $(GO) test -run '^$$' -bench ClientCost -benchmem -benchtime 20000x -count 1 ./internal/bucket >>"$$out" || { cat "$$out"; exit 1; }; \
	done && \
	$(GO) test -run '^$$' -bench HandlerOverhead -benchmem -count 5 ./internal/authorizer >>"$$out" || { cat "$$out"; exit 1; }; \
	$(GO) test -run '^$$' -bench CacheEntryBytes -benchtime 1x -count 1 ./internal/registry >>"$$out" || { cat "$$out"; exit 1; }; \
	grep '^Benchmark' "$$out" && \
	cd tools && BUCKETGATE_REQUIRE_SERVERS=1 $(GO) test -count=1 -timeout 15m -run '^TestReport$$' -v ./benchreport \
		-args -report="$(CURDIR)/BENCHMARKS.md" -gobench="$$out" -instructions="$$insn"

# bench-logbytes: make bench's item 11 alone (a minute): the bytes an authorizer
# invocation writes to CloudWatch Logs at the template's defaults and at DEBUG, printed
# as the line and the section make bench writes into BENCHMARKS.md.
.PHONY: bench-logbytes
bench-logbytes: $(DYNALITE) ## make bench's item 11 alone: the bytes an authorizer invocation writes to CloudWatch Logs
	cd tools && BUCKETGATE_REQUIRE_SERVERS=1 $(GO) test -count=1 -run '^TestLogBytes$$' -v ./benchreport -args -logbytes

# bench-coldstart: make bench's item 5 alone (a minute), without the registry table's
# column: each function's bootstrap size and its least start-to-ready time of five.
# bench-coldstart-registry: the same with that column, the authorizer started five times
# more with REGISTRY_TABLE on a dynalite of its own (needs Node.js, as make bench does).
.PHONY: bench-coldstart bench-coldstart-registry
bench-coldstart: ## make bench's item 5 alone: each function's bootstrap size and start-to-ready time
	cd tools && BUCKETGATE_REQUIRE_SERVERS=1 $(GO) test -count=1 -run '^TestColdStart$$' -v ./benchreport -args -coldstart

bench-coldstart-registry: $(DYNALITE) ## make bench-coldstart with item 5's last column: the authorizer ready with a registry table
	cd tools && BUCKETGATE_REQUIRE_SERVERS=1 $(GO) test -count=1 -run '^TestColdStart$$' -v ./benchreport -args -coldstart -coldstart-registry

# bench-instructions: Redis-side instructions per decision (callgrind), bucketgate against
# redis_rate: a figure that a busy machine does not move (needs valgrind: apt-get install valgrind).
.PHONY: bench-instructions
bench-instructions: ## Redis-side instructions per decision under callgrind (needs valgrind)
	bash tools/benchreport/instructions/instructions.sh

STRESS_FUZZTIME ?= 15s
STRESS_FLAGS ?=
.PHONY: stress
stress: ## reliability run (minutes, not part of test): load, faults, leases, rule changes, batches, hostile input, soak, fuzz; last line "over-admitted: N"
	cd tools && $(GO) run ./cmd/bucketgate-stress -fuzztime $(STRESS_FUZZTIME) $(STRESS_FLAGS)
