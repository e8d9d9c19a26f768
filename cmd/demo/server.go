package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/splathost/splathost/internal/restclient"
)

//go:embed page
var pageFiles embed.FS

// splatIDRE is the interface's 24-hex scene id.
var splatIDRE = regexp.MustCompile(`^[0-9a-f]{24}$`)

// server is the demo host's HTTP surface.
type server struct {
	mux     *http.ServeMux
	gateway string
	st      state
	index   *template.Template
}

// pageConfig is what the page's script needs; it is public by nature (no key of any kind).
type pageConfig struct {
	GatewayURL    string `json:"gatewayUrl"`
	SampleSplatID string `json:"sampleSplatId"`
	Customer      string `json:"customer"`
}

func newServer(gateway string, st state) (*server, error) {
	index, err := template.ParseFS(pageFiles, "page/index.html")
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(pageFiles, "page")
	if err != nil {
		return nil, err
	}
	s := &server{mux: http.NewServeMux(), gateway: gateway, st: st, index: index}
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.Handle("GET /demo.js", http.FileServerFS(static))
	s.mux.Handle("GET /demo.css", http.FileServerFS(static))
	s.mux.HandleFunc("POST /session", s.session)
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	return s, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page and its answers change with every session: never from a cache.
	w.Header().Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// pagePolicy is the demo page's Content-Security-Policy, as strict as an integrator's page can
// be around the embeds (docs/security.md, Content Security Policy): its own script and style
// only (its config is a JSON data block, which runs nothing), the SDK module imported from the
// gateway, the embeds framed from the gateway, requests to its own server only, and nobody may
// frame it.
func pagePolicy(gateway string) string {
	g := gateway
	if u, err := url.Parse(gateway); err == nil && u.Scheme != "" && u.Host != "" {
		g = u.Scheme + "://" + u.Host
	}
	return "default-src 'self'; script-src 'self' " + g + "; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; frame-src " + g + "; object-src 'none'; base-uri 'none'; form-action 'none'; " +
		"frame-ancestors 'none'"
}

func (s *server) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pagePolicy(s.gateway))
	cfg := pageConfig{GatewayURL: s.gateway, SampleSplatID: s.st.SampleSplatID, Customer: s.st.Customer}
	if err := s.index.Execute(w, cfg); err != nil {
		http.Error(w, "page failed", http.StatusInternalServerError)
	}
}

// sessionRequest is POST /session: which embed, which scene, whether the session is the
// signed-in demo customer's (scoped) or a guest's, the name the room shows for it (the
// side-by-side editors are two people; a guest without a name joins as 'Guest N'), and whether
// an editor may co-edit the room of its splatId without owning the scene (coEdit).
type sessionRequest struct {
	Type    string `json:"type"`
	SplatID string `json:"splatId"`
	Scoped  bool   `json:"scoped"`
	Name    string `json:"name"`
	CoEdit  bool   `json:"coEdit"`
}

// maxNameRunes is the session user.name bound of the interface (1-64 characters).
const maxNameRunes = 64

// session mints an embed session the way an integrator's backend does: with the secret key,
// from the server. The answer is the gateway's own (a token and its expiry, or the error
// envelope), which carries no key; a scene the gateway refused gets a message the page can show
// (refusedScene).
func (s *server) session(w http.ResponseWriter, r *http.Request) {
	var req sessionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "message": "body must be {type, splatId?, scoped?, name?, coEdit?}"})
		return
	}
	if req.Type != "viewer" && req.Type != "editor" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "message": "type must be viewer or editor"})
		return
	}
	if req.SplatID != "" && !splatIDRE.MatchString(req.SplatID) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "message": "splatId must be a 24-hex id"})
		return
	}
	if utf8.RuneCountInString(req.Name) > maxNameRunes || strings.TrimSpace(req.Name) != req.Name {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "message": "name must be at most 64 characters, without surrounding spaces"})
		return
	}
	body := map[string]any{"publicKey": s.st.PublicKey, "type": req.Type}
	if req.SplatID != "" {
		body["splatId"] = req.SplatID
	}
	if req.CoEdit {
		body["coEdit"] = true
	}
	headers := map[string]string{"Authorization": "Bearer " + s.st.SecretKey}
	name := req.Name
	if req.Scoped {
		// A signed-in customer: scoped to them, with their name shown in the editor.
		headers["X-Service-External-User-Id"] = s.st.Customer
		if name == "" {
			name = "Demo customer"
		}
	}
	if name != "" {
		body["user"] = map[string]any{"name": name}
	}
	resp, err := restclient.Do(s.gateway, "POST", "/api/editor/embed-sessions", headers, body)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]any{"status": "error", "message": "the gateway did not answer"})
		return
	}
	if resp.Status == http.StatusForbidden && req.SplatID != "" && resp.Body != nil {
		writeJSON(w, resp.Status, refusedScene(resp.Body, req, s.st.Customer))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.Status)
	w.Write(resp.Raw)
}

// refusedScene is the answer to a session the gateway refused (403) for the scene it names,
// which the page shows in the embed's place: the gateway's envelope with a message a visitor
// can act on (whose scenes this page may open), ending with the gateway's own reason. The
// gateway answers a scene of another tenant exactly as one that does not exist (out of scope),
// so the message names both.
func refusedScene(gw map[string]any, req sessionRequest, customer string) map[string]any {
	out := make(map[string]any, len(gw))
	for k, v := range gw {
		out[k] = v
	}
	reason, _ := gw["message"].(string)
	who := fmt.Sprintf("the demo customer %q: it is another tenant's or another customer's scene, or none at all", customer)
	if !req.Scoped {
		who = "a guest, who may open only public, embeddable scenes"
	}
	out["status"] = "error"
	out["message"] = fmt.Sprintf("Scene %s is out of this demo's scope: it is not a scene open to %s. "+
		"The gateway refused the %s session (403: %s).", req.SplatID, who, req.Type, reason)
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
