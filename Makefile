# bucketgate: every target runs on a fresh machine with Go; the real-Redis suites also
# need redis-server on PATH (apt-get install redis-server).
GO ?= go
TEST_FLAGS ?= -count=1 -timeout 10m

.PHONY: test vet
test: vet ## every test: unit (miniredis), real redis-server suites, fuzz seeds
	$(GO) test $(TEST_FLAGS) ./...

vet:
	$(GO) vet ./...

FUZZTIME ?= 30s
.PHONY: fuzz
fuzz: ## every fuzz target for FUZZTIME each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

STRESS_FUZZTIME ?= 15s
STRESS_FLAGS ?=
.PHONY: stress
stress: ## reliability run (minutes, not part of test): load, faults, hostile input, soak, fuzz; last line "over-admitted: N"
	$(GO) run ./cmd/bucketgate-stress -fuzztime $(STRESS_FUZZTIME) $(STRESS_FLAGS)
