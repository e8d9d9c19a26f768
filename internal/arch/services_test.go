package arch

import (
	"strings"
)

// offender is a violation the code still has, named with why and with what removes it. The
// list only shrinks: TestImportDirection fails on a violation not listed here and on an entry
// no violation needs any more.
type offender struct{ from, dep, why string }

// offenders are the violations still tolerated: none since the domain packages (internal/scenes,
// internal/customers, internal/webhooks) and the wiring packages took what others imported
// from the services. A new entry needs a why and a way out.
var offenders = []offender{}

// serviceRules: each service is its own: no services/X depends on services/Y; and only the
// binaries' wiring (cmd/, internal/allinone) imports a service, so the services stay parse ->
// call -> render over domain code that others may share.
func serviceRules(p listed) []violation {
	var out []violation
	deps := p.deps
	if p.test {
		deps = p.imports
	}
	if own, ok := service(p.rel); ok {
		for _, d := range deps {
			if other, ok := service(strings.TrimPrefix(d, mod)); ok && other != own && strings.HasPrefix(d, mod) {
				out = append(out, violation{p.String(), strings.TrimPrefix(d, mod), "no service depends on another"})
			}
		}
		return out
	}
	if strings.HasPrefix(p.rel, "cmd/") || p.rel == "internal/allinone" {
		return nil
	}
	for _, d := range p.imports {
		if rel, ok := strings.CutPrefix(d, mod); ok && strings.HasPrefix(rel, "services/") {
			out = append(out, violation{p.String(), rel, "only cmd/ and internal/allinone import services/*"})
		}
	}
	return out
}

// service is the service a package path (below the module) belongs to: "scene" for
// services/scene and services/scene/anything.
func service(rel string) (string, bool) {
	rest, ok := strings.CutPrefix(rel, "services/")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name, name != ""
}

// contractRule: workflows/contract depends on the standard library and the Temporal SDK only
// (its tests on testify too), so whatever imports it — ent's callers, the services, the
// workflows — gets nothing else with it.
func contractRule(p listed) []violation {
	if p.rel != "workflows/contract" {
		return nil
	}
	var out []violation
	for _, d := range p.imports {
		first, _, _ := strings.Cut(d, "/")
		switch {
		case !strings.Contains(first, "."), strings.HasPrefix(d, "go.temporal.io/sdk/"), d == mod+p.rel:
		case p.test && strings.HasPrefix(d, "github.com/stretchr/testify/"):
		default:
			out = append(out, violation{p.String(), strings.TrimPrefix(d, mod), "the contract imports the standard library and the Temporal SDK only"})
		}
	}
	for _, d := range p.deps {
		if rel, ok := strings.CutPrefix(d, mod); ok && rel != p.rel {
			out = append(out, violation{p.String(), rel, "the contract depends on no package of this module"})
		}
	}
	return out
}
