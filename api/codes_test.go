package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
	"github.com/splathost/splathost/internal/apperr"
)

// errorCodes is the document's ErrorCode enum.
func errorCodes(t *testing.T) []string {
	t.Helper()
	doc, err := apitest.Parse(api.Document)
	require.NoError(t, err)
	enum, _ := doc.Raw["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)["enum"].([]any)
	require.NotEmpty(t, enum, "components.schemas.ErrorCode.enum")
	codes := make([]string, len(enum))
	for i, v := range enum {
		codes[i] = v.(string)
	}
	return codes
}

// Every code the service can answer is in the enum: the one each status implies, the customer
// codes, and every code literal an error sets with With("code", "...") anywhere in the product.
func TestServiceCodesAreDocumented(t *testing.T) {
	enum := errorCodes(t)
	for _, c := range append(apperr.StatusCodes(), apperr.CodeCustomerNotProvisioned, apperr.CodeCustomerInactive) {
		require.Contains(t, enum, c, "apperr's code %s is not in ErrorCode", c)
	}
	set := map[string]string{}
	fset := token.NewFileSet()
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "web" || d.Name() == "ent" || (path != ".." && strings.HasPrefix(d.Name(), "."))) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "With" {
				return true
			}
			key, ok1 := call.Args[0].(*ast.BasicLit)
			val, ok2 := call.Args[1].(*ast.BasicLit)
			if ok1 && ok2 && key.Value == `"code"` && val.Kind == token.STRING {
				code, _ := strconv.Unquote(val.Value)
				set[code] = fset.Position(val.Pos()).String()
			}
			return true
		})
		return nil
	}))
	require.NotEmpty(t, set, "no With(\"code\", ...) found: the scan is broken")
	for code, where := range set {
		require.Contains(t, enum, code, "%s sets code %s, which ErrorCode does not list", where, code)
	}
}

// The Go SDK names every code of the enum (its Code* constants), and none other.
func TestSDKCodesAreTheDocumentedOnes(t *testing.T) {
	var sdk []string
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../sdk/go", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							break
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if ast.IsExported(name.Name) && strings.HasPrefix(name.Name, "Code") && ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							sdk = append(sdk, v)
						}
					}
				}
			}
		}
	}
	enum := errorCodes(t)
	roomOnly := []string{"SESSION_EXPIRED", "EDITOR_DISABLED", "READ_ONLY", "SERVER_ONLY", "ROOM_FULL", "MESSAGE_TOO_LARGE",
		"TOO_MANY_SOCKETS", "SEAT_TAKEN"}
	want := slices.DeleteFunc(slices.Clone(enum), func(c string) bool { return slices.Contains(roomOnly, c) })
	slices.Sort(sdk)
	slices.Sort(want)
	require.Equal(t, want, sdk, "the Go SDK's Code constants against ErrorCode (less the room's frame codes)")
}
