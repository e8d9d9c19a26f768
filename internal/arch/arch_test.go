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
	"analytics":            {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker"},
	// Shared plumbing stays below the domains.
	"internal/httpx":  {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	"internal/apperr": {"gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	// The Idempotency-Key protocol is plumbing in front of the services: it keeps answers, never
	// reads the domains' rows.
	"internal/idempotency": {"gateway", "services/", "workflows", "activities", "internal/boot", "internal/allinone", "internal/worker", "ent"},
	// Services never reach up to the gateway or across to the wiring, and know the activities
	// only by contract (workflows/contract) when they start or read a workflow.
	"services/": {"gateway", "internal/boot", "internal/allinone", "internal/worker", "cmd/", "activities"},
	// Workflows stay deterministic: they know the activities only by contract, and the
	// activities, which implement it, may use the stores but never the workflows.
	"activities": {"workflows", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker"},
	"workflows":  {"activities", "gateway", "services/", "internal/boot", "internal/allinone", "internal/worker", "internal/db", "internal/objectstore", "analytics", "ent", "internal/quota", "internal/events"},
	"gateway":    {"internal/boot", "internal/allinone", "internal/worker", "cmd/"},
}

// allowed are the packages a ban of a prefix above does not cover: workflows/contract is a leaf
// (the activities' names, inputs and results) that ent, activities, services and the workflows
// themselves import, though "workflows" is banned for most of them.
var allowed = []string{"workflows/contract"}

// external maps a package prefix to the modules outside this one it must never depend on, even
// indirectly: workflow code replays deterministically and is read by newcomers as plain
// Temporal code, so no store client or HTTP framework may hide below it.
var external = map[string][]string{
	"workflows": {"entgo.io/", "github.com/jackc/pgx/", "github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/gofiber/"},
}

// banned says whether dep (a full import path) is one that a package under from must not
// depend on.
func banned(from, dep string) (string, bool) {
	for _, ext := range external[from] {
		if strings.HasPrefix(dep, ext) {
			return ext, true
		}
	}
	rel, ok := strings.CutPrefix(dep, mod)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if rel == a || strings.HasPrefix(rel, a+"/") {
			return "", false
		}
	}
	for _, ban := range forbidden[from] {
		if strings.HasPrefix(rel, ban) {
			return ban, true
		}
	}
	return "", false
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
		for from := range forbidden {
			if !strings.HasPrefix(rel, from) {
				continue
			}
			checked++
			for _, d := range p.Deps {
				ban, bad := banned(from, d)
				require.False(t, bad, "%s must not depend on %s (rule: %s)", rel, d, ban)
			}
		}
	}
	require.Greater(t, checked, 8, "the rules matched the packages")
}
