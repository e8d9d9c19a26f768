package splathost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAdminCustomerUsageEscapesDotIDs: an external user id is one path segment whatever it
// holds; "." and ".." are escaped whole, since written as they are they would be dot segments
// (which the gateway refuses), and a slash is escaped as %2F.
func TestAdminCustomerUsageEscapesDotIDs(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RequestURI
		writeJSON(w, 200, `{"status":"success","usage":{"storage":{"usedBytes":0,"limitBytes":0,"remainingBytes":0,"percentUsed":0},"splats":{"used":0,"limit":null}}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv, nil)
	for eu, want := range map[string]string{
		"..":       "/admin/v1/integrations/i1/customers/%2E%2E/usage",
		".":        "/admin/v1/integrations/i1/customers/%2E/usage",
		"a.b":      "/admin/v1/integrations/i1/customers/a.b/usage",
		"team/ada": "/admin/v1/integrations/i1/customers/team%2Fada/usage",
	} {
		if _, err := c.AdminCustomerUsage(context.Background(), "i1", eu); err != nil {
			t.Fatal(eu, err)
		}
		if uri := <-got; uri != want {
			t.Fatalf("%q: sent %s, want %s", eu, uri, want)
		}
	}
}
