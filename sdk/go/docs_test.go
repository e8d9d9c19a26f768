package splathost_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The Go blocks of the documentation compile against this SDK: every ```go block of docs/,
// the repository's README and this folder's README. A block that opens with `package` is a
// program of its own; any other is a function body, run where ctx (a context.Context) and c
// (a *splathost.Client) are in scope, with the imports it names added. A block whose info
// string is `go fragment` is a piece of a larger program and is skipped.

// goBlock is one ```go block of a Markdown file.
type goBlock struct {
	file string
	line int
	code string
}

// fence is the opening of a Markdown code block and its info string.
var fence = regexp.MustCompile("^```\\s*(.*)$")

// goBlocks returns the Go blocks of a Markdown file that are not marked as fragments.
func goBlocks(t *testing.T, path string) []goBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []goBlock
	var cur *goBlock
	var code []string
	for i, line := range strings.Split(string(b), "\n") {
		if cur == nil {
			if m := fence.FindStringSubmatch(line); m != nil {
				cur = &goBlock{line: -1} // another language, or a fragment: skipped to its end
				if info := strings.Fields(m[1]); len(info) > 0 && info[0] == "go" && !(len(info) > 1 && info[1] == "fragment") {
					cur = &goBlock{file: path, line: i + 1}
				}
				code = nil
			}
			continue
		}
		if strings.TrimSpace(line) == "```" {
			if cur.line >= 0 {
				cur.code = strings.Join(code, "\n")
				out = append(out, *cur)
			}
			cur = nil
			continue
		}
		code = append(code, line)
	}
	return out
}

// imports are the packages a function-body block may use by name.
var imports = map[string]string{
	"splathost": "github.com/splathost/splathost/sdk/go",
	"webhook":   "github.com/splathost/splathost/sdk/go/webhook",
	"bytes":     "bytes", "context": "context", "errors": "errors", "fmt": "fmt", "io": "io",
	"json": "encoding/json", "log": "log", "http": "net/http", "os": "os", "strings": "strings",
	"time": "time",
}

// asProgram writes a function-body block as a file of package snippets: the body in a block of
// its own (so it may declare ctx and c again) followed by a use of each name it declares at its
// top level (a doc shows a result without always using it).
func asProgram(t *testing.T, name string, b goBlock) string {
	t.Helper()
	used := map[string]bool{"context": true, "splathost": true}
	for pkg := range imports {
		if regexp.MustCompile(`\b` + pkg + `\.`).MatchString(b.code) {
			used[pkg] = true
		}
	}
	var names []string
	for pkg := range used {
		names = append(names, pkg)
	}
	sort.Strings(names)
	var src strings.Builder
	src.WriteString("package snippets\n\nimport (\n")
	for _, pkg := range names {
		fmt.Fprintf(&src, "\t%s %q\n", pkg, imports[pkg])
	}
	fmt.Fprintf(&src, ")\n\nfunc %s() {\n\tctx := context.Background()\n\tvar c *splathost.Client\n\t_, _ = ctx, c\n\t{\n%s\n\t}\n}\n", name, b.code)
	// Use every name the body declares at its top level.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src.String(), 0)
	if err != nil {
		t.Fatalf("%s:%d: the block does not parse as a function body: %v", b.file, b.line, err)
	}
	body := f.Decls[len(f.Decls)-1].(*ast.FuncDecl).Body
	inner := body.List[len(body.List)-1].(*ast.BlockStmt)
	declared := map[string]bool{}
	for _, st := range inner.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						declared[id.Name] = true
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						declared[id.Name] = true
					}
				}
			}
		}
	}
	var uses strings.Builder
	for n := range declared {
		fmt.Fprintf(&uses, "\t\t_ = %s\n", n)
	}
	s := src.String()
	at := fset.Position(inner.Rbrace).Offset
	return s[:at] + uses.String() + s[at:]
}

func TestDocGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command")
	}
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(sdk, "..", "..")
	files := []string{filepath.Join(sdk, "README.md"), filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	guides, _ := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
	files = append(append(files, docs...), guides...)

	mod := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(mod, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module docsnippets\n\ngo 1.23\n\nrequire github.com/splathost/splathost/sdk/go v0.0.0\n\n"+
		"replace github.com/splathost/splathost/sdk/go => "+sdk+"\n")
	where := map[string]string{} // generated file -> the block it came from
	n := 0
	for _, f := range files {
		for _, b := range goBlocks(t, f) {
			n++
			origin := fmt.Sprintf("%s:%d", strings.TrimPrefix(b.file, root+string(filepath.Separator)), b.line)
			if strings.HasPrefix(strings.TrimSpace(b.code), "package ") {
				rel := fmt.Sprintf("program%d/main.go", n)
				write(rel, b.code+"\n")
				where[rel] = origin
				continue
			}
			rel := fmt.Sprintf("snippets/block%d.go", n)
			write(rel, asProgram(t, fmt.Sprintf("block%d", n), b))
			where[rel] = origin
		}
	}
	if n < 5 {
		t.Fatalf("only %d Go blocks found: the extraction is broken", n)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := out.String()
		for rel, origin := range where {
			msg = strings.ReplaceAll(msg, rel, rel+" ("+origin+")")
		}
		t.Fatalf("%d Go blocks of the docs; go vet: %v\n%s", n, err, msg)
	}
	t.Logf("%d Go blocks of the docs compile", n)
}
