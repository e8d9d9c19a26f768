//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/testenv"
)

// TestJSSDKPackage packs the npm package @splathost/sdk (sdk/js) with `npm pack`, installs the
// tarball into a directory outside the repository (offline: the package has no dependencies),
// and runs an integrator's Node program (testdata/sdk-js-program.mjs) that uses only the package
// against this binary's stack: a customer provisioned, a 600 KB scene uploaded in one PUT and a
// 120 MB PLY in eight parts (the service's parts are 16 MiB), interrupted after its first part
// and resumed by its uploadId, both committed, a viewer session minted, the scenes iterated one
// per page, and the stack's splat.created deliveries verified with the endpoint's secret. The
// PLY is streamed to disk here and read lazily by the program (fs.openAsBlob), part by part.
func TestJSSDKPackage(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	// The guard against a hang; the program itself waits on progress (docs/testing.md).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := osexec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}

	// The web build (make build) built the package into sdk/js/dist. npm pack packs that build
	// without its prepack, which would rebuild dist in place while web's npm test, beside this
	// test under make test, imports it.
	pkg := filepath.Join(root, "sdk", "js")
	_, err = os.Stat(filepath.Join(pkg, "dist", "index.js"))
	require.NoError(t, err, "sdk/js/dist is built by `make web` (make build)")
	work := t.TempDir()
	packed := run(pkg, "npm", "pack", "--ignore-scripts", "--pack-destination", work, "--json")
	var pack []struct {
		Filename string `json:"filename"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(packed[strings.Index(packed, "["):]), &pack), packed)
	require.Len(t, pack, 1)
	var files []string
	for _, f := range pack[0].Files {
		files = append(files, f.Path)
	}
	require.Contains(t, files, "dist/index.js")
	require.Contains(t, files, "dist/index.d.ts")
	require.Contains(t, files, "dist/webhook.js")
	require.NotContains(t, files, "src/client.ts", "the tarball ships the build, not the sources")

	app := filepath.Join(work, "app")
	require.NoError(t, os.MkdirAll(app, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"integrator-app","private":true,"type":"module"}`), 0o644))
	run(app, "npm", "install", "--offline", "--no-audit", "--no-fund", filepath.Join(work, pack[0].Filename))
	program, err := os.ReadFile(filepath.Join(root, "e2e", "testdata", "sdk-js-program.mjs"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(app, "main.mjs"), program, 0o644))
	small := filepath.Join(work, "small.splat")
	require.NoError(t, os.WriteFile(small, fixtures.Splat(600*1024/fixtures.SplatRecordSize), 0o644))
	// A valid 120 MB PLY (SH degree 3, 248 bytes a Gaussian), written as it is generated.
	big := filepath.Join(work, "big.ply")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, fixtures.Gen{Seed: 39}.WriteTrainingPLY(f, 120_000_000/fixtures.TrainingPLYStride(3), 3))
	require.NoError(t, f.Close())
	st, err := os.Stat(big)
	require.NoError(t, err)
	bigSize := st.Size()
	bigParts := int((bigSize + mpPartSize - 1) / mpPartSize)

	tn := newTenant(t)
	cmd := osexec.CommandContext(ctx, "node", "main.mjs")
	cmd.Dir = app
	cmd.Env = append(os.Environ(), "SPLATHOST_URL="+env.URL, "SPLATHOST_PK="+tn.PublicKey, "SPLATHOST_SK="+tn.SecretKey,
		"SMALL_FILE="+small, "BIG_FILE="+big)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the Node program failed:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var seen struct {
		ExternalUserID     string   `json:"externalUserId"`
		SmallPartPuts      int      `json:"smallPartPuts"`
		MultipartParts     int      `json:"multipartParts"`
		ResumedFrom        int      `json:"resumedFrom"`
		ResumedPuts        int      `json:"resumedPuts"`
		UploadID           string   `json:"uploadId"`
		SplatIDs           []string `json:"splatIds"`
		Session            bool     `json:"session"`
		Listed             int      `json:"listed"`
		ListPages          int      `json:"listPages"`
		VerifiedDeliveries int      `json:"verifiedDeliveries"`
		LoggedDeliveries   int      `json:"loggedDeliveries"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &seen), "%s", out)
	t.Logf("the Node program saw: %s", lines[len(lines)-1])
	require.Equal(t, 8, bigParts, "a 120 MB file is eight 16 MiB parts")
	require.Equal(t, 0, seen.SmallPartPuts, "the 600 KB scene went in one PUT, no part: %s", out)
	require.Equal(t, bigParts, seen.MultipartParts, "the 120 MB scene went in parts: %s", out)
	require.Equal(t, 1, seen.ResumedFrom, "the resume starts from the part stored before the interruption: %s", out)
	require.Equal(t, bigParts-1, seen.ResumedPuts, "the resume sends only the parts not stored: %s", out)
	require.NotEmpty(t, seen.UploadID)
	require.Len(t, seen.SplatIDs, 3)
	require.True(t, seen.Session)
	require.Equal(t, 3, seen.Listed)
	require.GreaterOrEqual(t, seen.ListPages, 3, "one scene a page: %s", out)
	require.GreaterOrEqual(t, seen.VerifiedDeliveries, 3)
	require.GreaterOrEqual(t, seen.LoggedDeliveries, 3)

	// What the program did is in the stack: the two scenes it kept are stored at their sizes.
	for i, want := range map[int]int64{0: 600 * 1024, 1: bigSize} {
		r := do(t, "GET", "/api/v1/splats/"+seen.SplatIDs[i], tn.keys(seen.ExternalUserID), nil)
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.EqualValues(t, want, r.Body["splat"].(map[string]any)["fileSizeBytes"])
	}
}

// TestEmbedUploaderSmallFile: the embed SDK's createUploader (web/dist/sdk/splathost-embed.js,
// the module the gateway serves), run in Node with a customer's editor session as a page would,
// sends a 640 KB scene in one signed PUT through the editor routes (below the multipart minimum,
// where a multipart start is refused); its fileUrl commits through the editor route and the scene
// serves back every byte.
func TestEmbedUploaderSmallFile(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	sdk := filepath.Join(root, "web", "dist", "sdk", "splathost-embed.js")
	_, err = os.Stat(sdk)
	require.NoError(t, err, "web/dist is built by `make web` (make build)")
	tn := newTenant(t)
	require.Equal(t, 200, do(t, "PUT", "/api/v1/external-user", tn.keys("ada"), map[string]any{}).Status)
	session := editorToken(t, tn, "ada")
	scene := fixtures.Splat(640 * 1024 / fixtures.SplatRecordSize)
	file := filepath.Join(t.TempDir(), "small.splat")
	require.NoError(t, os.WriteFile(file, scene, 0o644))

	// A guard against a hang only: the upload is one request and one PUT of 640 KB.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "node", filepath.Join(root, "e2e", "testdata", "embed-uploader-program.mjs"))
	cmd.Env = append(os.Environ(), "SDK="+sdk, "SPLATHOST_URL="+env.URL, "SESSION="+session, "FILE="+file)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the Node program failed:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var seen struct {
		Result map[string]string `json:"result"`
		Puts   []struct {
			Part bool `json:"part"`
		} `json:"puts"`
		Events []map[string]int64 `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &seen), "%s", out)
	require.Len(t, seen.Puts, 1, "one PUT: %s", out)
	require.False(t, seen.Puts[0].Part, "the PUT is the whole file, not a part: %s", out)
	require.NotContains(t, seen.Result, "uploadId", "a single PUT has no upload to resume: %s", out)
	size := int64(len(scene))
	require.Equal(t, []map[string]int64{{"bytesDone": 0, "partsTotal": 1}, {"bytesDone": size, "partsTotal": 1}}, seen.Events,
		"progress at the start and the end, no uploadId event: %s", out)

	r := do(t, "POST", editorPath("/splats"), sessionHeaders(session), map[string]any{"title": "Small", "splatUrl": seen.Result["fileUrl"]})
	require.Equal(t, 201, r.Status, string(r.Raw))
	splat := splatOf(r)
	require.EqualValues(t, size, splat["fileSizeBytes"])
	resp, err := http.Get(splat["splatUrl"].(string))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, bytes.Equal(scene, got), "the scene serves back the uploaded bytes")
}
