//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
)

// TestCommitRefusesHostileSceneFiles (issue 38, item 6): a PLY whose header claims more
// vertices than its body holds, and a .sog zip bomb, answer the commit's 400 through the
// gateway with the reason among the issues; nothing is charged, and a sound file still commits.
func TestCommitRefusesHostileSceneFiles(t *testing.T) {
	a := newTenant(t)
	ensureCustomer(t, a, "hostile", nil)
	ply := fixtures.PLY(80)
	claimed := bytes.Replace(ply, []byte("element vertex 80\n"), []byte(fmt.Sprintf("element vertex %d\n", 1<<31-1)), 1)
	require.NotEqual(t, ply, claimed)
	cases := []struct {
		name, fileName, contentType string
		data                        []byte
		want                        string
	}{
		{"ply claiming 2^31-1 vertices", "scene.ply", "application/ply", claimed, "claims 2147483647 vertices"},
		{"ply with bytes past its records", "scene.ply", "application/ply", append(append([]byte{}, ply...), make([]byte, 68)...), "68 bytes after the records"},
		{"sog with a 1 GiB meta.json", "scene.sog", "application/sog", fixtures.SOGBomb(1 << 30), "more than 100 times its size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fileURL := uploadFile(t, a, "hostile", c.fileName, c.contentType, c.data)
			issues := requireEnvelope(t, do(t, "POST", "/api/v1/splats", a.keys("hostile"), map[string]any{"title": c.name, "splatUrl": fileURL}), 400)
			require.True(t, issuesMention(issues, c.want), "issues %v should mention %q", issues, c.want)
		})
	}
	u := do(t, "GET", "/api/v1/external-user/usage", a.keys("hostile"), nil).Body["usage"].(map[string]any)
	require.EqualValues(t, 0, u["storage"].(map[string]any)["usedBytes"], "a refused commit charges nothing")
	for _, f := range []struct{ name, contentType string }{{"scene.ply", "application/ply"}, {"scene.sog", "application/sog"}} {
		data := ply
		if f.contentType == "application/sog" {
			data = fixtures.SOG(80)
		}
		r := do(t, "POST", "/api/v1/splats", a.keys("hostile"), map[string]any{"title": "sound " + f.name,
			"splatUrl": uploadFile(t, a, "hostile", f.name, f.contentType, data)})
		require.Equal(t, 201, r.Status, string(r.Raw))
	}
}
