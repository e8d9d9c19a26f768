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

// fakeGateway answers the mint endpoint like the real one and records what it was sent.
func fakeGateway(t *testing.T, got *[]*http.Request, bodies *[]map[string]any) *httptest.Server {
	t.Helper()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/editor/embed-sessions", r.URL.Path)
		var body map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		*got, *bodies = append(*got, r), append(*bodies, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"status":"success","sessionToken":"a.b.c","expiresAt":"2030-01-01T00:15:00.000Z"}`)
	}))
	t.Cleanup(gw.Close)
	return gw
}

func TestSessionMintsServerSide(t *testing.T) {
	var reqs []*http.Request
	var bodies []map[string]any
	gw := fakeGateway(t, &reqs, &bodies)
	st := state{PublicKey: "mpk_pub", SecretKey: testSecret, Customer: "demo-customer", SampleSplatID: strings.Repeat("a", 24)}
	srv, err := newServer(gw.URL, st)
	require.NoError(t, err)

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
			before := len(reqs)
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest("POST", "/session", strings.NewReader(c.body)))
			require.Equal(t, c.status, w.Code, w.Body.String())
			require.NotContains(t, w.Body.String(), testSecret)
			if c.wantBody == nil {
				require.Len(t, reqs, before, "a refused request reaches no gateway")
				return
			}
			require.Len(t, reqs, before+1)
			r := reqs[len(reqs)-1]
			require.Equal(t, "Bearer "+testSecret, r.Header.Get("Authorization"))
			require.Equal(t, c.eu, r.Header.Get("X-Service-External-User-Id"))
			require.Equal(t, c.wantBody, bodies[len(bodies)-1])
			require.JSONEq(t, `{"status":"success","sessionToken":"a.b.c","expiresAt":"2030-01-01T00:15:00.000Z"}`, w.Body.String())
		})
	}
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
