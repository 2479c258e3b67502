# hookcert — `make help` lists the targets.
GO        ?= go
PKGS      ?= ./...
# Pinned so that `make generate` gives the same mocks everywhere.
MOCKERY   ?= github.com/vektra/mockery/v2@v2.53.7
# Tests share one PostgreSQL server; each test creates its own database.
export HOOKCERT_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_\/-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/hookcert
	$(GO) build -o bin/hookcert ./cmd/hookcert

.PHONY: test
test: ## Run every test against real PostgreSQL (HOOKCERT_TEST_DATABASE_URL)
	$(GO) test -count=1 $(PKGS)

.PHONY: test-race
test-race: ## Run every test with the race detector
	$(GO) test -race -count=1 $(PKGS)

.PHONY: lint
lint: ## go vet and a gofmt check
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: generate
generate: ## Regenerate mocks (mockery v2, pinned) and generated docs
	$(GO) generate $(PKGS)

.PHONY: demo
demo: build ## Start the reference receiver on a throwaway PostgreSQL and certify it
	./bin/hookcert demo

.PHONY: bench
bench: ## Benchmarks that print side-by-side ratios measured in one run
	./scripts/bench.sh

.PHONY: verify
verify: lint test ## Everything CI checks
