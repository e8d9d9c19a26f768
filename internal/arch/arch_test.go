package arch

import (
	"encoding/json"
	"io"
	"os/exec"
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
	// with a service's, workflow's or edge's own code. Pending the moves of issue 17's other
	// parts, tools/bench still imports services/user (the key validators, moving to
	// internal/credentials) and activities (AssetRef and CopySource, moving to
	// internal/objectkeys); the list becomes "services/" and gains "activities" once they moved.
	"tools/": {"services/scene", "services/session", "workflows", "internal/worker", "gateway", "internal/boot", "internal/allinone", "cmd/"},
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
	// Services never reach up to the gateway or across to the wiring.
	"services/": {"gateway", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
	// The session service checks keys through internal/credentials, not the user service.
	"services/session": {"services/user"},
	// Workflows stay deterministic: activities may be referenced, never the reverse.
	"activities": {"workflows", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker"},
	"workflows":  {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "internal/db", "internal/objectstore", "analytics"},
	// The gateway forwards to the services over HTTP and shares none of their code.
	"gateway": {"services/", "activities", "workflows", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
	// The dev stack runner (the tools module, seen through go.work) drives the product's binaries
	// from outside and shares only the lower floors.
	"tools/stack": {"services/", "activities", "workflows", "internal/worker", "gateway", "internal/boot", "internal/allinone", "cmd/"},
}

// forbiddenOutside maps a package prefix to modules outside this one it must never depend on
// (directly or not).
var forbiddenOutside = map[string][]string{
	"analytics": {"entgo.io/"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", mod+"...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked, sawTools := 0, false
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for from, bans := range forbiddenOutside {
			if !strings.HasPrefix(rel, from) {
				continue
			}
			for _, d := range p.Deps {
				for _, ban := range bans {
					require.False(t, strings.HasPrefix(d, ban), "%s must not depend on %s", rel, d)
				}
			}
		}
		sawTools = sawTools || strings.HasPrefix(rel, "tools/")
		for from, bans := range forbiddenImports {
			if !strings.HasPrefix(rel, from) {
				continue
			}
			checked++
			for _, d := range p.Imports {
				dep := strings.TrimPrefix(d, mod)
				for _, ban := range bans {
					require.False(t, strings.HasPrefix(d, mod) && strings.HasPrefix(dep, ban), "%s must not import %s", rel, dep)
				}
			}
		}
		for from, bans := range forbidden {
			if !strings.HasPrefix(rel, from) {
				continue
			}
			checked++
			for _, d := range p.Deps {
				if !strings.HasPrefix(d, mod) {
					continue
				}
				dep := strings.TrimPrefix(d, mod)
				for _, ban := range bans {
					require.False(t, strings.HasPrefix(dep, ban), "%s must not import %s", rel, dep)
				}
			}
		}
	}
	require.Greater(t, checked, 8, "the rules matched the packages")
	require.True(t, sawTools, "go list saw no package of the tools module (is go.work in use?)")
}
