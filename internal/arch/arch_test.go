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
	// Services never reach up to the gateway or across to the wiring.
	"services/": {"gateway", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
	// The session service checks keys through internal/credentials, not the user service.
	"services/session": {"services/user"},
	// Workflows stay deterministic: activities may be referenced, never the reverse.
	"activities": {"workflows", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker"},
	"workflows":  {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "internal/db", "internal/objectstore", "analytics"},
	// The gateway forwards to the services over HTTP and shares none of their code.
	"gateway": {"services/", "activities", "workflows", "internal/boot", "internal/allinone", "internal/worker", "cmd/"},
}

// forbiddenOutside maps a package prefix to modules outside this one it must never depend on
// (directly or not).
var forbiddenOutside = map[string][]string{
	"analytics": {"entgo.io/"},
}

type pkg struct {
	ImportPath string
	Deps       []string
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", mod+"...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
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
}
