# hookcert — `make help` lists the targets.
GO        ?= go
PKGS      ?= ./...
# mockery is pinned in scenarios/generate.go (go run …/mockery/v2@v2.53.7), so
# `make generate` gives the same mocks everywhere.
# Tests share one PostgreSQL server; each test creates its own database.
export HOOKCERT_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_\/-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/hookcert
	$(GO) build -o bin/hookcert ./cmd/hookcert

# make test runs every package once: the ones whose goroutines meet
# (RACE_PKGS) under the race detector, beside the rest without it, the
# self-test (the longest) first. With PKGS set, just those packages, without
# -race.
.PHONY: test
test: ## Run every test against real PostgreSQL (HOOKCERT_TEST_DATABASE_URL), RACE_PKGS under -race
ifeq ($(PKGS),./...)
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-race-pkgs test-rest-pkgs
else
	$(GO) test -count=1 $(PKGS)
endif

# The two halves of make test run side by side: the self-test mostly waits
# (settle periods, restarts, lock gates), the race detector mostly computes.
# Each half's output is printed whole when it ends.
.PHONY: test-race-pkgs test-rest-pkgs
# -timeout: the self-test certifies every defect and example; on a loaded
# runner it may pass go test's default 10 minutes and be killed mid-run.
test-race-pkgs:
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)
test-rest-pkgs:
	$(GO) test -count=1 -timeout 30m $(filter %/selftest,$(REST_PKGS)) $(filter-out %/selftest,$(REST_PKGS))

.PHONY: test-race
test-race: ## Run every test with the race detector
	$(GO) test -race -count=1 $(PKGS)

# RACE_PKGS are the packages whose goroutines meet; the self-test (the whole
# suite per defect, 6+ minutes under -race) runs without it in make test.
RACE_PKGS ?= ./simulator ./scenarios ./scenarios/check ./scenarios/certify ./scenarios/harness ./scenarios/hookcerttest ./reference ./reference/failpoint ./adapters/pgfault ./adapters/observe ./adapters/process
# REST_PKGS are the packages outside RACE_PKGS (import paths).
REST_PKGS = $(shell $(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))")

.PHONY: race
race: ## Race detector on the packages whose goroutines meet (RACE_PKGS), as CI runs it
	$(GO) test -race -count=1 $(RACE_PKGS)

.PHONY: cross
cross: ## Build every package for macOS and Windows (Unix-only code is behind build tags)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) build $(PKGS)

# make release builds what a release publishes, into DIST: one archive per
# platform (tar.gz; zip for Windows) holding the hookcert binary and README.md,
# and SHA256SUMS. The binary reports VERSION (hookcert version) and is built
# with -trimpath and without cgo; the archives' files carry the commit's time,
# uid 0 and a fixed order, so one commit gives the same bytes on every machine
# with the same Go. VERSION defaults to the tag at HEAD, else the commit's
# pseudo-version; a tree with uncommitted changes gets "+dirty". Needs GNU tar,
# gzip and zip.
VERSION   ?= $(shell v=$$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=v0.0.0-%cd-%h --abbrev=12); git diff --quiet HEAD 2>/dev/null || v=$$v+dirty; echo $$v)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST      ?= bin/release
RELEASE_EPOCH = $(shell git log -1 --format=%ct)
RELEASE_LDFLAGS = -s -w -X github.com/hookcert/hookcert/scenarios/harness.releaseVersion=$(VERSION)

.PHONY: release
release: ## Build the release archives for PLATFORMS and their SHA256SUMS into DIST (VERSION stamped)
	@command -v zip >/dev/null || case "$(PLATFORMS)" in *windows*) echo "make release: zip is missing (apt-get install zip)"; exit 1;; esac
	@rm -rf $(DIST) && mkdir -p $(DIST)/.stage
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=hookcert_$(VERSION)_$${os}_$${arch}; dir=$(DIST)/.stage/$$name; exe=hookcert; \
	  [ $$os = windows ] && exe=hookcert.exe; \
	  echo "release: $$name"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto -ldflags '$(RELEASE_LDFLAGS)' -o $$dir/$$exe ./cmd/hookcert; \
	  install -m 0644 README.md $$dir/README.md; chmod 0755 $$dir/$$exe; \
	  touch -d @$(RELEASE_EPOCH) $$dir/*; \
	  if [ $$os = windows ]; then \
	    (cd $$dir && TZ=UTC zip -q -X -9 ../../$$name.zip $$exe README.md); \
	  else \
	    tar --sort=name --mtime=@$(RELEASE_EPOCH) --owner=0 --group=0 --numeric-owner --format=ustar \
	      -C $$dir -cf - $$exe README.md | gzip -9n > $(DIST)/$$name.tar.gz; \
	  fi; \
	done
	@rm -rf $(DIST)/.stage
	@cd $(DIST) && sha256sum hookcert_* > SHA256SUMS && cat SHA256SUMS

.PHONY: lint
lint: ## go vet, a gofmt check, and the library entry point free of testcontainers
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@n=$$($(GO) list -deps ./scenarios/hookcerttest ./examples/gotest | grep -c testcontainers); if [ "$$n" != 0 ]; then echo "scenarios/hookcerttest pulls testcontainers"; exit 1; fi

# go generate runs scenarios/generate.go (mocks, docs/guarantees.md) and
# internal/docs (every <!-- generated:… --> region of the Markdown files).
.PHONY: generate
generate: ## Regenerate mocks (mockery v2, pinned), docs/guarantees.md and the figures the docs quote
	$(GO) generate $(PKGS)

.PHONY: verify-generated
verify-generated: generate ## Fail when generated files are not committed
	@git diff --exit-code -- '*.go' '*.md' || (echo "generated files are stale: run make generate and commit"; exit 1)
	@new=$$(git ls-files --others --exclude-standard -- '*.go' docs/guarantees.md); if [ -n "$$new" ]; then echo "generated files not committed:"; echo "$$new"; exit 1; fi

.PHONY: demo
demo: build ## Start the reference receiver on a throwaway PostgreSQL and certify it
	./bin/hookcert demo

.PHONY: bench
bench: ## Benchmarks measured in one run, then their figures side by side with their targets (bench/all.sh)
	./bench/all.sh

FLAKE_RUNS ?= 20
.PHONY: soak
soak: ## 60 s, 64-way soaks of the reference receiver, sync and inbox modes, under kills and session terminations (docs/soak.md)
	$(GO) run ./cmd/hookcert soak --demo --duration 60s --concurrency 64 --nemesis kill=5s,pg-terminate=7s --report-dir hookcert-soak/sync
	$(GO) run ./cmd/hookcert soak --demo --mode inbox --duration 60s --concurrency 64 --nemesis kill=5s,pg-terminate=7s --report-dir hookcert-soak/inbox

.PHONY: flake-check
flake-check: build ## Certify the clean reference FLAKE_RUNS times in a row; stop at the first failure
	@for i in $$(seq 1 $(FLAKE_RUNS)); do \
	  ./bin/hookcert demo --database-url "$(HOOKCERT_TEST_DATABASE_URL)" --seed $$i --report-dir /tmp/hookcert-flake > /tmp/hookcert-flake.log 2>&1 \
	    || { echo "run $$i (seed $$i) failed:"; tail -40 /tmp/hookcert-flake.log; exit 1; }; \
	  echo "run $$i/$(FLAKE_RUNS) (seed $$i): $$(grep -E '^(PASSED|FAILED|ERROR)' /tmp/hookcert-flake.log)"; \
	done

.PHONY: verify
verify: lint test ## Everything CI checks

FUZZTIME ?= 10m
# FUZZFLAGS passes more flags to go test, e.g. FUZZFLAGS=-parallel=1 on a shared machine.
FUZZFLAGS ?=
.PHONY: fuzz
fuzz: ## Run every Fuzz test in the repository for FUZZTIME (default 10m) each; stop at the first finding
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for name in $$($(GO) test -list '^Fuzz' $$dir | grep '^Fuzz'); do \
	    echo "== $$dir $$name ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$dir; \
	  done; \
	done

ISOLATION_RUNS ?= 50
.PHONY: isolation-check
isolation-check: build ## Certify the reference with slow-ack ISOLATION_RUNS times, random seeds: only ACK-2 may fail (scenarios cannot disturb each other)
	@for i in $$(seq 1 $(ISOLATION_RUNS)); do \
	  seed=$$(od -An -N3 -tu4 /dev/urandom | tr -d ' '); \
	  ./bin/hookcert demo --database-url "$(HOOKCERT_TEST_DATABASE_URL)" --seed $$seed --defect slow-ack --report-dir /tmp/hookcert-isolation > /tmp/hookcert-isolation.log 2>&1; \
	  failed=$$(grep -E '^  (FAIL|ERROR)' /tmp/hookcert-isolation.log | awk '{print $$2}' | tr '\n' ' '); \
	  if [ "$$failed" != "ACK-2 " ]; then echo "run $$i (seed $$seed): not applicable, failed or errored: $$failed"; tail -30 /tmp/hookcert-isolation.log; exit 1; fi; \
	  echo "run $$i/$(ISOLATION_RUNS) (seed $$seed): only ACK-2 failed"; \
	done
