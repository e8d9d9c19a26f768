//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/api"
	"github.com/splathost/splathost/api/apitest"
	"github.com/splathost/splathost/internal/testenv"
)

// contract holds every answer of this package's requests to api/openapi.yaml (watchContract).
var contract *recorder

// recorder collects the answers that contradict the OpenAPI document until a test reports
// them. Requests made from goroutines have no *testing.T at hand, so violations wait for the
// test's next request through do, or its end.
type recorder struct {
	doc        *apitest.Document
	mu         sync.Mutex
	violations []string
	watched    map[*testing.T]bool
	// checked counts the answers held to the document; unmatched counts, by method and path,
	// the requests no operation documents (the tests' deliberate wrong paths), so the summary
	// shows nothing real went unchecked.
	checked   int
	unmatched map[string]int
}

// watchContract loads the document and has testenv.Do show it every answer: each is held to
// its operation's schema, and each error envelope to a code of the ErrorCode enum.
func watchContract() error {
	doc, err := apitest.Parse(api.Document)
	if err != nil {
		return err
	}
	contract = &recorder{doc: doc, watched: map[*testing.T]bool{}, unmatched: map[string]int{}}
	testenv.Observe = contract.observe
	return nil
}

func (r *recorder) observe(_, method, path string, resp *testenv.Response) {
	documented, err := r.doc.Check(method, path, resp.Status, resp.Header.Get("Content-Type"), resp.Raw)
	codeErr := r.doc.CheckErrorCode(method, path, resp.Header.Get("Content-Type"), resp.Raw)
	r.mu.Lock()
	defer r.mu.Unlock()
	if codeErr != nil {
		r.violations = append(r.violations, codeErr.Error())
	}
	if !documented {
		r.unmatched[method+" "+strings.SplitN(path, "?", 2)[0]]++
		return
	}
	r.checked++
	if err != nil {
		r.violations = append(r.violations, err.Error())
	}
}

// report fails t with the violations recorded since the last report, and again at t's end for
// answers its goroutines receive after its last request.
func (r *recorder) report(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	if !r.watched[t] {
		r.watched[t] = true
		t.Cleanup(func() { r.flush(t) })
	}
	r.mu.Unlock()
	r.flush(t)
}

func (r *recorder) flush(t *testing.T) {
	t.Helper()
	for _, v := range r.take() {
		t.Errorf("answer contradicts api/openapi.yaml: %s", v)
	}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.violations
	r.violations = nil
	return v
}

// leftover prints the violations no test reported (answers to tests that never called do) and
// a summary of what was checked, and returns how many violations there were.
func (r *recorder) leftover() int {
	v := r.take()
	for _, e := range v {
		fmt.Fprintln(os.Stderr, "e2e: answer contradicts api/openapi.yaml:", e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(os.Stderr, "e2e: %d answers checked against api/openapi.yaml; requests to undocumented routes:", r.checked)
	for _, k := range slices.Sorted(maps.Keys(r.unmatched)) {
		fmt.Fprintf(os.Stderr, " %s (%d)", k, r.unmatched[k])
	}
	fmt.Fprintln(os.Stderr)
	return len(v)
}

// routeParam matches a path parameter in either notation: Fiber's :name and a trailing *, or
// OpenAPI's {name}.
var routeParam = regexp.MustCompile(`:[A-Za-z0-9_]+|\{[^}]+\}|\*$`)

// fiberParam is a Fiber parameter (:name), which routeShape writes as OpenAPI's {name}.
var fiberParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// routeShape writes a served route in OpenAPI's notation with its parameters' names, so a route
// whose parameter is named other than the document's ({splatId} served as :id) differs. Fiber's
// trailing * (a static folder's or an asset's whole key) has no name: it is {*}.
func routeShape(path string) string {
	if strings.HasSuffix(path, "*") {
		path = strings.TrimSuffix(path, "*") + "{*}"
	}
	return fiberParam.ReplaceAllString(path, "{$1}")
}

// wildcardShape is a documented path with its last parameter, when the path ends in one, as
// the {*} a Fiber wildcard route is served as (/assets/{key} by /assets/*).
func wildcardShape(path string) string {
	if i := strings.LastIndex(path, "{"); i >= 0 && strings.HasSuffix(path, "}") {
		return path[:i] + "{*}"
	}
	return path
}

// TestOpenAPIRoutesMatchGateway walks the routes of the in-process product (the gateway with every
// service mounted) and holds them to the document both ways: every served route is documented
// with its method and its parameters' names, and every documented operation is served — a
// request to it, with the credentials it documents, is answered by its route, not by the
// gateway's 404/405 fallback.
func TestOpenAPIRoutesMatchGateway(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range env.Process.App.GetRoutes(true) {
		// HEAD mirrors GET. A static folder (path ending in *) answers only GET; its handler
		// refuses every other method with a 405 of its own.
		if rt.Method == fiber.MethodHead || strings.HasSuffix(rt.Path, "*") && rt.Method != fiber.MethodGet {
			continue
		}
		served[rt.Method+" "+routeShape(rt.Path)] = true
	}
	documented := map[string]bool{}
	for _, op := range contract.doc.Operations {
		documented[op.Method+" "+op.Path] = true
		documented[op.Method+" "+wildcardShape(op.Path)] = true
	}
	var undocumented, unserved []string
	for r := range served {
		if !documented[r] {
			undocumented = append(undocumented, r)
		}
	}
	for _, op := range contract.doc.Operations {
		if !served[op.Method+" "+op.Path] && !served[op.Method+" "+wildcardShape(op.Path)] {
			unserved = append(unserved, op.Method+" "+op.Path)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unserved)
	require.Empty(t, undocumented, "routes the gateway serves that api/openapi.yaml does not document")
	require.Empty(t, unserved, "operations api/openapi.yaml documents that no route serves")

	tn := newTenant(t)
	const eu = "openapi-routes"
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", tn.keys(eu), nil).Status)
	session := editorToken(t, tn, eu)
	// Values that reach each route's handler: ids of nothing (404 from the handler, which is no
	// fallback) and real asset names.
	values := map[string]string{
		"splatId": "0123456789abcdef01234567", "jobId": "00000000-0000-4000-8000-000000000000",
		"accountId": "0123456789abcdef01234567", "integrationId": "0123456789abcdef01234567", "externalUserId": eu,
		"uploadId":  "0123456789abcdef01234567",
		"webhookId": "0123456789abcdef01234567", "deliveryId": "0123456789abcdef01234567",
		// A token mid-path (/assets/s/{token}/{key}): left empty, the path's "//" is not canonical.
		"token": "0.AAAA",
		// A docs page (the guides' index).
		"page": "guides",
	}
	assets := map[string]string{"/embed/assets/": "viewer.js", "/sdk/": "splathost-embed.js", "/docs/assets/": "docs.js",
		"/assets/": "i/x/u/y/f/z/scene.splat", "/assets/s/": "0.AAAA", "/assets/s/{token}/": "i/x/u/y/f/z/scene.splat"}
	var fallbacks []string
	for _, op := range contract.doc.Operations {
		path := routeParam.ReplaceAllStringFunc(op.Path, func(p string) string {
			if v, ok := values[strings.Trim(p, "{}")]; ok {
				return v
			}
			return assets[strings.TrimSuffix(op.Path, p)]
		})
		headers := map[string]string{}
		switch scheme := contract.security(op); scheme {
		case "secretKey+publicKey":
			headers = tn.keys(eu)
		case "secretKey":
			headers = tn.secretBearer(eu)
		case "sessionBearer":
			headers = sessionHeaders(session)
		case "sessionQuery":
			path += "?session=" + session
		case "adminBearer":
			headers = admin()
		case "":
		default:
			t.Fatalf("%s %s: no credentials for scheme %s", op.Method, op.Path, scheme)
		}
		var body any
		if op.Method == fiber.MethodPost || op.Method == fiber.MethodPut || op.Method == fiber.MethodPatch {
			body = "{}"
		}
		r := do(t, op.Method, path, headers, body)
		if r.Status == fiber.StatusMethodNotAllowed || r.Status == fiber.StatusNotFound && r.Body["message"] == "route not found" {
			fallbacks = append(fallbacks, fmt.Sprintf("%s %s: %d %s", op.Method, path, r.Status, r.Raw))
		}
	}
	require.Empty(t, fallbacks, "documented operations answered by the gateway's fallback")
}

// security names the operation's first security requirement, its schemes joined by "+" in the
// document's order ("" when it needs none).
func (r *recorder) security(op apitest.Operation) string {
	item, _ := r.doc.Raw["paths"].(map[string]any)[op.Path].(map[string]any)
	o, _ := item[strings.ToLower(op.Method)].(map[string]any)
	reqs, _ := o["security"].([]any)
	if len(reqs) == 0 {
		return ""
	}
	first, _ := reqs[0].(map[string]any)
	var names []string
	for name := range first {
		names = append(names, name)
	}
	// Map order is random; the combinations the document uses sort into a fixed name.
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) })
	return strings.Join(names, "+")
}
