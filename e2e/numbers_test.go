//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/httpx"
)

// badNumbers are numbers no body may carry (docs/security.md, Numbers): beyond the doubles,
// non-zero but rounding to zero, subnormal, or a zero Postgres' numeric cannot hold.
var badNumbers = []string{"1e200000", "-1e200000", "1e-20000", "1.8e308", "5e-324", "0e-99999"}

// TestNumbersOutOfRangeAreRefused: a number the store cannot hold, anywhere in a body (customer
// metadata, levelData deep inside, the commit's camera arrays, the editor's PATCH and commit, a
// webhook's body) is a 400 with the spec's envelope whose issue names its place, and nothing is
// written; the edges that are kept are stored and read back as sent. Before the shared decoder
// refused them, metadata's 1e200000, 1.8e308, 1e-20000 and 0e-99999 reached Postgres and
// answered 500 ("value overflows numeric format"), 1e-20000 and 5e-324 in levelData or a camera
// array were stored as 0, and the other refusals named no place.
func TestNumbersOutOfRangeAreRefused(t *testing.T) {
	tn := newTenant(t)
	const owner = "numbers-owner"
	sc := commitScene(t, tn, owner, 4)
	sceneID := sc["id"].(string)
	editor := sessionHeaders(editorToken(t, tn, owner))
	routes := []struct {
		name, method, path string
		headers            map[string]string
		body               string // NUM is replaced by the number
		at                 string // the place the issue must name
	}{
		{"customer metadata", "PUT", "/api/v1/external-user", tn.keys(owner),
			`{"displayName":"Ada","metadata":{"plan":"gold","n":NUM}}`, "metadata.n"},
		{"scene patch", "PATCH", splatPath(sceneID), tn.keys(owner), `{"title":"T","n":NUM}`, "n"},
		{"editor patch levelData", "PATCH", editorPath("/splats/" + sceneID), editor,
			`{"title":"T","levelData":{"camera":{"position":[0,1,2],"target":[0,0,0]},"custom":{"v":[[0],[1,NUM]]}}}`,
			"levelData.custom.v[1][1]"},
		{"commit camera", "POST", "/api/v1/splats", tn.keys(owner),
			`{"title":"New","splatUrl":"` + sc["splatUrl"].(string) + `","initialCameraPosition":[0,NUM,0]}`,
			"initialCameraPosition[1]"},
		{"editor commit levelData", "POST", editorPath("/splats"), editor,
			`{"title":"New","splatUrl":"` + sc["splatUrl"].(string) + `","levelData":{"note":"x","n":NUM}}`, "levelData.n"},
		{"webhook", "POST", "/api/v1/webhooks", tn.keys(""),
			`{"url":"https://hooks.example.com/x","events":[NUM]}`, "events[0]"},
	}
	before := writeFingerprint(t, tn)
	for _, rt := range routes {
		for _, num := range badNumbers {
			t.Run(rt.name+" "+num, func(t *testing.T) {
				r := do(t, rt.method, rt.path, rt.headers, strings.ReplaceAll(rt.body, "NUM", num))
				issues := requireEnvelope(t, r, 400)
				want := rt.at + ": " + httpx.NumberRangeProblem
				if num == "0e-99999" {
					want = rt.at + ": " + httpx.NumberScaleProblem
				}
				require.Equal(t, []any{want}, issues)
			})
		}
	}
	require.Equal(t, before, writeFingerprint(t, tn), "a refused request wrote something")

	// The edges that are kept are stored and read back as the doubles sent.
	kept := `{"max":1.7976931348623157e308,"min":-2.2250738585072014e-308,"e308":1e308,"zero":0e99999,` +
		`"negzero":-0,"big":123456789012345678901234567890}`
	r := do(t, "PUT", "/api/v1/external-user", tn.keys(owner), `{"metadata":`+kept+`}`)
	require.Equal(t, 200, r.Status, string(r.Raw))
	var sent map[string]float64
	require.NoError(t, json.Unmarshal([]byte(kept), &sent))
	r = do(t, "GET", "/api/v1/external-user", tn.keys(owner), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	got := r.Body["externalUser"].(map[string]any)["metadata"].(map[string]any)
	for k, v := range sent {
		require.Equal(t, v, got[k], k)
	}
	r = do(t, "PATCH", editorPath("/splats/"+sceneID), editor,
		`{"levelData":{"camera":{"position":[1e308,-2.2250738585072014e-308,0],"target":[0,0,0]}}}`)
	require.Equal(t, 200, r.Status, string(r.Raw))
}

// TestNumbersInRoomEdits: a room edit carrying a number the store cannot hold is refused as a
// malformed frame (an error frame, then 4400) by the decoder the room parses frames with, and
// the draft is unchanged. Before, the edit reached the draft's jsonb and the socket closed with
// 1011. (The room's error frame carries the envelope's message only, not its issues.)
func TestNumbersInRoomEdits(t *testing.T) {
	tn := newTenant(t)
	scene := roomScene(t, tn)
	a, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Ada"))
	b, _ := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Bea"))
	a.send(t, map[string]any{"type": "edit", "fields": map[string]any{"title": "fine"}})
	require.Equal(t, "fine", b.next(t, "edit", 5*time.Second)["fields"].(map[string]any)["title"])
	a.send(t, json.RawMessage(`{"type":"edit","fields":{"levelData":{"n":1e200000}}}`))
	require.Equal(t, "VALIDATION", a.next(t, "error", 5*time.Second)["code"])
	require.Equal(t, 4400, a.closeCode(t, 5*time.Second))
	_, w := join(t, env.URL, scene, roomToken(t, tn, "ada", scene, "Cy"))
	require.EqualValues(t, 1, w["seq"], "the refused edit made no draft change")
	require.Equal(t, map[string]any{"title": "fine"}, w["draft"])

}

// TestNumbersPostgresAgrees: no number the decoder accepts is one Postgres' jsonb refuses, over
// literals drawn around every edge of both (the doubles' range and subnormals, Postgres'
// 16383 digits after the point, its weight and exponent limits, Go's 800 digits), each tried
// on the real server; and each the server refuses, the decoder refuses as a number.
func TestNumbersPostgresAgrees(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(26, 5))
	exps := []int{0, 1, 5, 292, 293, 307, 308, 309, 323, 324, 325, 400, 799, 800, 16383, 16384,
		99999, 131071, 131072, 1073741822, 1073741823, 1073741824}
	digits := func(n int) string {
		var b strings.Builder
		b.WriteByte(byte('1' + rng.IntN(9)))
		for i := 1; i < n; i++ {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		return b.String()
	}
	mantissa := func() string {
		switch rng.IntN(7) {
		case 0:
			return "0"
		case 1:
			return "0." + strings.Repeat("0", 1+rng.IntN(900))
		case 2:
			return digits(1+rng.IntN(20)) + "." + digits(1+rng.IntN(20))
		case 3:
			return "0." + strings.Repeat("0", rng.IntN(400)) + digits(1+rng.IntN(5))
		case 4:
			return digits([]int{299, 300, 309, 310, 799, 800, 801}[rng.IntN(7)])
		case 5:
			return "1." + strings.Repeat("0", []int{15, 798, 799, 800}[rng.IntN(4)])
		default:
			return digits(1 + rng.IntN(30))
		}
	}
	lits := []string{"1e200000", "1e-20000", "0e99999", "0e-16383", "0e-16384", "5e-324",
		"1.7976931348623157e308", "2.2250738585072014e-308", "123456789012345678901234567890"}
	for len(lits) < 1500 {
		lit := mantissa()
		if rng.IntN(4) > 0 {
			e := max(exps[rng.IntN(len(exps))]+rng.IntN(3)-1, 0)
			sign := []string{"", "+", "-"}[rng.IntN(3)]
			lit += []string{"e", "E"}[rng.IntN(2)] + sign + strconv.Itoa(e)
		}
		if rng.IntN(2) == 0 {
			lit = "-" + lit
		}
		require.True(t, json.Valid([]byte(lit)), lit)
		lits = append(lits, lit)
	}
	accepted, pgRefused := 0, 0
	for _, lit := range lits {
		issues := httpx.NumberIssues([]byte(`{"n":` + lit + `}`))
		var out string
		err := env.Process.DB.Pool.QueryRow(ctx, `SELECT ($1::text::jsonb->'n')::text`, `{"n":`+lit+`}`).Scan(&out)
		short := lit
		if len(short) > 60 {
			short = short[:30] + "…" + short[len(short)-20:]
		}
		if issues == nil {
			accepted++
			require.NoError(t, err, "the decoder accepted %s (%d characters), Postgres refused it", short, len(lit))
			// And Postgres holds the double sent (its text reads back as the same double).
			want, _ := strconv.ParseFloat(lit, 64)
			back, perr := strconv.ParseFloat(out, 64)
			require.NoError(t, perr, short)
			require.True(t, want == back, "%s stored as %s", short, out)
			continue
		}
		require.Len(t, issues, 1, short)
		require.True(t, strings.HasPrefix(issues[0], "n: number "), "%s: %v", short, issues)
		if err != nil {
			pgRefused++
			require.Contains(t, err.Error(), "numeric", short)
		}
	}
	t.Logf("%d literals: %d accepted (all stored by Postgres), %d refused, %d of them by Postgres too",
		len(lits), accepted, len(lits)-accepted, pgRefused)
	require.Greater(t, accepted, 300, "the draw covers accepted numbers")
	require.Greater(t, pgRefused, 100, "the draw covers Postgres' limits")
	require.Less(t, accepted, len(lits)-300, fmt.Sprintf("the draw covers refused numbers (%d accepted)", accepted))
}
