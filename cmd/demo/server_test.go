package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const testSecret = "msk_test-secret-never-served"

// minted is the real mint endpoint's success answer.
const minted = `{"status":"success","sessionToken":"a.b.c","expiresAt":"2030-01-01T00:15:00.000Z"}`

// minting is a demo server in front of a fake gateway that answers every mint with one status
// and answer, like the real one, and records what it was sent.
type minting struct {
	srv    *server
	st     state
	reqs   []*http.Request
	bodies []map[string]any
}

func newMinting(t *testing.T, status int, answer string) *minting {
	t.Helper()
	m := &minting{st: state{PublicKey: "mpk_pub", SecretKey: testSecret, Customer: "demo-customer", SampleSplatID: strings.Repeat("a", 24)}}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/editor/embed-sessions", r.URL.Path)
		var body map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		m.reqs, m.bodies = append(m.reqs, r), append(m.bodies, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(gw.Close)
	srv, err := newServer(gw.URL, m.st)
	require.NoError(t, err)
	m.srv = srv
	return m
}

func TestSessionMintsServerSide(t *testing.T) {
	m := newMinting(t, 201, minted)
	srv, st := m.srv, m.st

	cases := []struct {
		name, body string
		status     int
		eu         string
		wantBody   map[string]any
	}{
		{"guest editor", `{"type":"editor"}`, 201, "", map[string]any{"publicKey": "mpk_pub", "type": "editor"}},
		{"scoped viewer of a scene", `{"type":"viewer","splatId":"` + st.SampleSplatID + `","scoped":true}`, 201, "demo-customer",
			map[string]any{"publicKey": "mpk_pub", "type": "viewer", "splatId": st.SampleSplatID, "user": map[string]any{"name": "Demo customer"}}},
		{"named guest editor", `{"type":"editor","name":"Grace"}`, 201, "",
			map[string]any{"publicKey": "mpk_pub", "type": "editor", "user": map[string]any{"name": "Grace"}}},
		{"second signed-in user", `{"type":"editor","scoped":true,"name":"Ada Lovelace"}`, 201, "demo-customer",
			map[string]any{"publicKey": "mpk_pub", "type": "editor", "user": map[string]any{"name": "Ada Lovelace"}}},
		{"guest invited to co-edit", `{"type":"editor","coEdit":true,"splatId":"` + st.SampleSplatID + `"}`, 201, "",
			map[string]any{"publicKey": "mpk_pub", "type": "editor", "coEdit": true, "splatId": st.SampleSplatID}},
		{"name too long", `{"type":"editor","name":"` + strings.Repeat("é", 65) + `"}`, 400, "", nil},
		{"name with spaces around", `{"type":"editor","name":" x "}`, 400, "", nil},
		{"unknown type", `{"type":"admin"}`, 400, "", nil},
		{"bad scene id", `{"type":"viewer","splatId":"../x"}`, 400, "", nil},
		{"unknown field", `{"type":"viewer","secretKey":true}`, 400, "", nil},
		{"not json", `type=viewer`, 400, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(m.reqs)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest("POST", "/session", strings.NewReader(c.body)))
			require.Equal(t, c.status, w.Code, w.Body.String())
			require.NotContains(t, w.Body.String(), testSecret)
			if c.wantBody == nil {
				require.Len(t, m.reqs, before, "a refused request reaches no gateway")
				return
			}
			require.Len(t, m.reqs, before+1)
			r := m.reqs[len(m.reqs)-1]
			require.Equal(t, "Bearer "+testSecret, r.Header.Get("Authorization"))
			require.Equal(t, c.eu, r.Header.Get("X-Service-External-User-Id"))
			require.Equal(t, c.wantBody, m.bodies[len(m.bodies)-1])
			require.JSONEq(t, minted, w.Body.String())
		})
	}
}

// TestSessionExplainsARefusedScene: a session the gateway refuses for the scene it names (403
// out of scope: another tenant's scene, another customer's private one, or none) is answered
// with the gateway's status and envelope and a message the page shows in the embed's place,
// naming the scene, whose scenes the page may open and the gateway's reason. Any other
// refusal is the gateway's answer as it came.
func TestSessionExplainsARefusedScene(t *testing.T) {
	const refused = `{"status":"error","message":"splatId is out of scope for this session","code":"FORBIDDEN"}`
	srv := newMinting(t, 403, refused).srv
	foreign := strings.Repeat("f", 24)

	cases := []struct {
		name, body string
		want       []string
	}{
		{"the customer's viewer", `{"type":"viewer","splatId":"` + foreign + `","scoped":true}`,
			[]string{"Scene " + foreign + " is out of this demo's scope", `the demo customer "demo-customer"`,
				"another tenant's or another customer's scene, or none at all", "refused the viewer session",
				"(403: splatId is out of scope for this session)"}},
		{"the customer's editor", `{"type":"editor","splatId":"` + foreign + `","scoped":true}`,
			[]string{"Scene " + foreign, `the demo customer "demo-customer"`, "refused the editor session"}},
		{"a guest invited to co-edit", `{"type":"editor","splatId":"` + foreign + `","coEdit":true}`,
			[]string{"Scene " + foreign, "a guest, who may open only public, embeddable scenes", "refused the editor session"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest("POST", "/session", strings.NewReader(c.body)))
			require.Equal(t, 403, w.Code)
			require.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var got map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
			require.Equal(t, "error", got["status"])
			require.Equal(t, "FORBIDDEN", got["code"], "the gateway's envelope is kept")
			for _, want := range c.want {
				require.Contains(t, got["message"], want)
			}
			require.NotContains(t, w.Body.String(), testSecret)
		})
	}

	// Without a scene, a refusal is not about one: the gateway's answer, untouched.
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("POST", "/session", strings.NewReader(`{"type":"editor","scoped":true}`)))
	require.Equal(t, 403, w.Code)
	require.JSONEq(t, refused, w.Body.String())
}

func TestPageCarriesNoKey(t *testing.T) {
	st := state{PublicKey: "mpk_pub", SecretKey: testSecret, Customer: "demo-customer", SampleSplatID: strings.Repeat("b", 24)}
	srv, err := newServer("http://gateway.test", st)
	require.NoError(t, err)
	for _, path := range []string{"/", "/demo.js", "/demo.css"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, w.Code, path)
		require.NotContains(t, w.Body.String(), testSecret, path)
		require.NotContains(t, w.Body.String(), "mpk_pub", path)
		require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	require.Contains(t, w.Body.String(), `{"gatewayUrl":"http://gateway.test","sampleSplatId":"`+st.SampleSplatID+`","customer":"demo-customer"}`)
	// Its policy names the gateway's origin for the SDK and the frames, and nothing inline.
	require.Equal(t, "default-src 'self'; script-src 'self' http://gateway.test; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; frame-src http://gateway.test; object-src 'none'; base-uri 'none'; form-action 'none'; "+
		"frame-ancestors 'none'", w.Header().Get("Content-Security-Policy"))
	require.NotContains(t, w.Header().Get("Content-Security-Policy"), "unsafe")
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/state.json", nil))
	require.Equal(t, 404, w.Code)
}
