package arch

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const mod = "github.com/splathost/splathost/"

// forbiddenImports maps a package prefix to the prefixes it must never import directly; for
// packages whose indirect dependencies may legitimately reach further (the benchmark runs
// product stacks through internal/testenv, which starts the product in-process).
var forbiddenImports = map[string][]string{
	// The benchmark's bare handlers do the product's work with the pieces the services take
	// from the lower floors (key shapes, session tokens, upload rules, the view statement), never
	// with a service's, workflow's, activity's or edge's own code.
	"tools/": {"services/", "activities", "workflows", "internal/worker", "gateway", "internal/boot", "internal/allinone", "cmd/"},
}

// forbidden maps a package prefix to the prefixes it must never import (directly or not).
var forbidden = map[string][]string{
	// Stores know nothing of who uses them.
	"ent":                  {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "analytics"},
	"internal/db":          {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker"},
	"internal/objectstore": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker"},
	// Analytics speaks plain pgx and ClickHouse, below the product's data model.
	"analytics": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db"},
	// The scene change notice serves ent and plain-pgx writers alike.
	"internal/pgnotify": {"ent", "internal/db"},
	// Shared plumbing stays below the domains.
	"internal/httpx":  {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	"internal/apperr": {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	// The Idempotency-Key protocol is plumbing in front of the services: it keeps answers, never
	// reads the domains' rows.
	"internal/idempotency": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	// The credential cache serves the gateway and the session service from below both.
	"internal/credentials": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker"},
	// The leaves the services take a rule from that others must meet too stay leaves.
	"internal/sessiontoken": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db"},
	"internal/uploadrules":  {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db"},
	"internal/embedsql":     {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db"},
	"internal/roomproto":    {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db"},
	// The rate limiter is a leaf under the gateway, the session service and the configuration.
	"internal/ratelimit": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent", "internal/db", "internal/config", "internal/httpx"},
	// The user domain (internal/customers) is what services/user wraps: no HTTP service, edge or
	// wiring above it, and no workflow code (it starts none; the service does after the commit).
	"internal/customers": {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "cmd/", "workflows", "activities"},
	// The scene domain (rules and the stores that run them) is below the services that wrap it
	// in HTTP, and knows the workflows only by contract.
	"internal/scenes": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
	// Services never reach up to the gateway or across to the wiring, and know the activities
	// only by contract (workflows/contract) when they start or read a workflow.
	"services/": {"gateway", "internal/boot", "internal/allinone", "internal/worker", "cmd/", "activities"},
	// Workflows stay deterministic: they know the activities only by contract, and the
	// activities, which implement it, may use the stores but never the workflows.
	"activities": {"workflows", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker"},
	"workflows":  {"activities", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "internal/db", "internal/objectstore", "analytics", "ent", "internal/quota", "internal/events"},
	// The gateway forwards to the services over HTTP and shares none of their code.
	"gateway": {"services/", "activities", "workflows", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
	// A delivery attempt is domain code the activity and a service's dispatcher both call: it
	// knows no workflow, activity, service or wiring (the contract's plain types aside).
	"internal/webhooks": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "internal/webhookstart"},
	// The route table is a leaf every edge and binary routes with.
	"internal/routes": {"gateway", "services/", "workflows", "activities", "internal/", "ent", "cmd/"},
	// The service binaries and the gateway's link neither the Temporal worker nor what only it
	// runs (the activities, media and its converter): they dial Temporal through
	// internal/temporalconn and start webhook deliveries through internal/webhookstart.
	"cmd/gateway": serviceBinaryBans,
	"cmd/user":    serviceBinaryBans,
	"cmd/scene":   serviceBinaryBans,
	"cmd/session": serviceBinaryBans,
	// The dev stack runner (the tools module, seen through go.work) drives the product's binaries
	// from outside and shares only the lower floors.
	"tools/stack": {"services/", "activities", "workflows", "internal/worker", "gateway", "internal/boot", "internal/allinone", "cmd/"},
}

// serviceBinaryBans are what the gateway's and the services' binaries must not link.
var serviceBinaryBans = []string{"activities", "media", "internal/worker"}

// allowed are the packages a ban of a prefix above does not cover: workflows/contract is a leaf
// (the activities' names, inputs and results) that activities, services and the workflows
// themselves import, though "workflows" is banned for most of them. It is no exemption for the
// strict rules: ent stores what the activities write but knows no workflow package at all.
var allowed = []string{"workflows/contract"}

// strict are the rules (by importer prefix) the allowed packages are no exemption from.
var strict = []string{"ent"}

// external maps a package prefix to the modules outside this one it must never depend on, even
// indirectly: workflow code replays deterministically and is read by newcomers as plain
// Temporal code, so no store client or HTTP framework may hide below it.
var external = map[string][]string{
	"workflows": {"entgo.io/", "github.com/jackc/pgx/", "github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/gofiber/"},
	// Analytics speaks plain pgx and ClickHouse, below the product's data model.
	"analytics": {"entgo.io/"},
	// The scene rules are shared by the scene and session services and the worker: no HTTP
	// framework below them, so the worker links none and the rules test without a request.
	"internal/scenes": {"github.com/gofiber/"},
	// The domain rules are plain Go under the HTTP framework the services bring.
	"internal/webhooks": {"github.com/gofiber/"},
	// The user domain and the idempotency record its transactions write are plain Go too: the
	// gateway applies the Idempotency-Key header (gateway/idempotency.go), not this package.
	"internal/customers":   {"github.com/gofiber/"},
	"internal/idempotency": {"github.com/gofiber/"},
}

// under says whether the package rel is covered by a rule for from: from itself and below it
// (a from ending in "/" covers everything below it), so internal/webhooks' rule is not
// internal/webhookstart's.
func under(rel, from string) bool {
	return rel == from || strings.HasPrefix(rel, strings.TrimSuffix(from, "/")+"/")
}

// banned says whether dep (a full import path) is a package of this module that a package under
// from must not depend on under rules (forbidden, or forbiddenImports for direct imports).
func banned(rules map[string][]string, from, dep string) (string, bool) {
	rel, ok := strings.CutPrefix(dep, mod)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if !slices.Contains(strict, from) && (rel == a || strings.HasPrefix(rel, a+"/")) {
			return "", false
		}
	}
	for _, ban := range rules[from] {
		if strings.HasPrefix(rel, ban) {
			return ban, true
		}
	}
	return "", false
}

// violation is one dependency a rule forbids: from (a package, or its tests) on dep.
type violation struct{ from, dep, rule string }

// TestImportDirection checks every package against the rules, its tests too: a package's own
// build by what it depends on (directly or not), its test build by what its test files import
// directly (a test may start the whole product through internal/testenv, whose dependencies are
// not the test's own). A violation passes only while offenders names it, and an offender no
// violation needs any more fails the test too, so the list can only shrink.
func TestImportDirection(t *testing.T) {
	pkgs := listModule(t)
	var found []violation
	checked, sawTools := 0, false
	for _, p := range pkgs {
		sawTools = sawTools || strings.HasPrefix(p.rel, "tools/")
		vs, n := prefixRules(p)
		checked += n
		found = append(found, vs...)
		found = append(found, serviceRules(p)...)
		found = append(found, contractRule(p)...)
	}
	used := make([]bool, len(offenders))
	for _, v := range found {
		i := slices.IndexFunc(offenders, func(o offender) bool { return o.from == v.from && o.dep == v.dep })
		if i < 0 {
			t.Errorf("%s must not depend on %s (rule: %s)", v.from, v.dep, v.rule)
			continue
		}
		used[i] = true
	}
	for i, o := range offenders {
		if !used[i] {
			t.Errorf("offender %s -> %s no longer imports it: remove it from the list", o.from, o.dep)
		}
	}
	require.Greater(t, checked, 8, "the rules matched the packages")
	require.True(t, sawTools, "go list saw no package of the tools module (is go.work in use?)")
}

// prefixRules applies forbidden, forbiddenImports and external to p, and counts the rules that
// matched it.
func prefixRules(p listed) (out []violation, checked int) {
	deps := p.deps
	if p.test {
		deps = p.imports
	}
	for _, rule := range []struct {
		rules map[string][]string
		deps  []string
	}{{forbidden, deps}, {forbiddenImports, p.imports}} {
		for from := range rule.rules {
			if !under(p.rel, from) {
				continue
			}
			checked++
			for _, d := range rule.deps {
				if ban, bad := banned(rule.rules, from, d); bad {
					out = append(out, violation{p.String(), strings.TrimPrefix(d, mod), ban})
				}
			}
		}
	}
	for from, exts := range external {
		if !under(p.rel, from) {
			continue
		}
		for _, d := range deps {
			for _, ext := range exts {
				if strings.HasPrefix(d, ext) {
					out = append(out, violation{p.String(), d, ext})
				}
			}
		}
	}
	return out, checked
}
