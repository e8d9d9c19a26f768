package arch

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listed is one package of the module (and of the tools module, through go.work) as the rules
// see it: a package's own build, or its tests (its _test.go files, inside the package or beside
// it as p_test), named by the package they test.
type listed struct {
	// rel is the path below the module.
	rel string
	// test says these are rel's tests: imports are their test files' own imports and deps is
	// empty (a test's indirect dependencies are the packages' it imports, checked as those).
	test bool
	// imports and deps are full import paths.
	imports, deps []string
}

// String names the package in a failure.
func (p listed) String() string {
	if p.test {
		return p.rel + " (tests)"
	}
	return p.rel
}

// listModule runs go list with the e2e build tag (so the e2e tests are checked too) and lists
// each package and, where it has tests, its tests' imports.
func listModule(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", "e2e", "-json=ImportPath,Imports,Deps,TestImports,XTestImports", mod+"...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var all []listed
	for {
		var p struct {
			ImportPath                               string
			Imports, Deps, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, mod)
		if !ok {
			continue
		}
		all = append(all, listed{rel: rel, imports: p.Imports, deps: p.Deps})
		var tests []string
		for _, d := range append(p.TestImports, p.XTestImports...) {
			if d != p.ImportPath && !slices.Contains(tests, d) {
				tests = append(tests, d)
			}
		}
		if len(tests) > 0 {
			all = append(all, listed{rel: rel, test: true, imports: tests})
		}
	}
	return all
}
