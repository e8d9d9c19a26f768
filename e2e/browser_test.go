//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/media"
	splathost "github.com/splathost/splathost/sdk/go"
)

// chromium is Debian's Chromium; the browser tests never let a tool download its own browser.
const chromium = "/usr/bin/chromium"

// formatSplats is the size of each format's test scene: enough splats to cover a visible part
// of the canvas, few enough to render quickly in a software WebGL (SwiftShader).
const formatSplats = 3000

// browserDeps fails the test, naming the fix, when something the browser tests need is missing:
// they must never be skipped silently.
func browserDeps(t *testing.T, root string) {
	t.Helper()
	var missing []string
	if _, err := osexec.LookPath("node"); err != nil {
		missing = append(missing, "node (Debian's nodejs)")
	}
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium+" (Debian's chromium)")
	}
	if _, err := os.Stat(filepath.Join(root, "web", "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "web/node_modules (npm ci in web/)")
	}
	if len(missing) > 0 {
		t.Fatalf("the browser tests need %s: `make deps` installs them", strings.Join(missing, ", "))
	}
}

// demoHost is a running demo host (bin/demo) against this binary's stack.
type demoHost struct {
	URL   string
	State struct {
		IntegrationID string `json:"integrationId"`
		PublicKey     string `json:"publicKey"`
		SecretKey     string `json:"secretKey"`
		Customer      string `json:"customer"`
		SampleSplatID string `json:"sampleSplatId"`
		SampleScene   string `json:"sampleScene"`
	}
	// Stop ends the demo host (SIGTERM) and waits for it; the test's cleanup calls it too.
	Stop func()
}

// tenant is the demo's integration, for REST calls as its server would make them.
func (d *demoHost) tenant() tenant {
	return tenant{PublicKey: d.State.PublicKey, SecretKey: d.State.SecretKey}
}

var (
	demoReadyRE = regexp.MustCompile(`demo host ready at (http://\S+)`)
	demoStarts  atomic.Int64
)

// startDemo runs bin/demo on a free port against the in-process gateway, as `make dev` runs it
// against the split one, with its state in stateFile, and waits for its ready line.
func startDemo(t *testing.T, root, stateFile string) *demoHost {
	t.Helper()
	cmd := osexec.Command(filepath.Join(root, "bin", "demo"), "--addr", "127.0.0.1:0", "--gateway", env.URL, "--state", stateFile)
	cmd.Env = env.Config.Environ() // SPLATHOST_ADMIN_TOKEN for the operator API
	// The demo dies with the test binary, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logPath := filepath.Join(env.Dir, fmt.Sprintf("demo-%d.log", demoStarts.Add(1)))
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = logf
	require.NoError(t, spawn.Start(cmd))
	d := &demoHost{}
	var once sync.Once
	d.Stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			logf.Close()
		})
	}
	t.Cleanup(d.Stop)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if m := demoReadyRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case d.URL = <-ready:
	case <-time.After(time.Minute):
		log, _ := os.ReadFile(logPath)
		t.Fatalf("the demo host did not start:\n%s", log)
	}
	raw, err := os.ReadFile(stateFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &d.State))
	require.Regexp(t, `^[0-9a-f]{24}$`, d.State.SampleSplatID, "the demo seeded its sample scene")
	return d
}

// formatScenes commits one scene of every format the viewer must render, all showing g's scene,
// owned by the demo customer so the demo page can mint viewer sessions for them; it returns
// format → splatId.
func formatScenes(t *testing.T, d *demoHost, g fixtures.Gen) map[string]string {
	t.Helper()
	tn, eu := d.tenant(), d.State.Customer
	name := g.Scene.String()
	files := []struct{ format, name, contentType string }{
		{"ply", name + ".ply", "application/ply"},
		{"compressed-ply", name + ".compressed.ply", "application/ply"},
		{"splat", name + ".splat", "application/splat"},
		{"ksplat", name + ".ksplat", "application/ksplat"},
		{"sog", name + ".sog", "application/sog"},
	}
	data := map[string][]byte{"ply": g.PLY(formatSplats), "compressed-ply": g.CompressedPLY(formatSplats), "splat": g.Splat(formatSplats),
		"ksplat": g.KSplat(formatSplats), "sog": g.SOG(formatSplats)}
	out := map[string]string{}
	for _, f := range files {
		url := uploadFile(t, tn, eu, f.name, f.contentType, data[f.format])
		r := do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{"title": "Format " + f.format + " " + name, "splatUrl": url})
		require.Equal(t, 201, r.Status, string(r.Raw))
		out[f.format] = r.Body["splatId"].(string)
	}
	folder := g.LODFolder(formatSplats)
	up := requestLOD(t, tn, eu, folder)
	putLOD(t, up, folder, fixtures.LODPaths(folder))
	r := do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{
		"title": "Format lod " + name, "splatType": "lod", "splatUrl": up.manifestURL, "lodFolderKey": up.folderKey})
	require.Equal(t, 201, r.Status, string(r.Raw))
	out["lod"] = r.Body["splatId"].(string)
	return out
}

// renditionScene commits the standing scene as a training PLY of the demo customer and waits
// until its rendition is ready; it returns the scene's id.
func renditionScene(t *testing.T, d *demoHost, g fixtures.Gen) string {
	t.Helper()
	tn, eu := d.tenant(), d.State.Customer
	var b bytes.Buffer
	require.NoError(t, g.WriteTrainingPLY(&b, formatSplats*4, 3))
	id := commitFile(t, tn, eu, "stand-training.ply", "application/ply", b.Bytes(), nil)["id"].(string)
	p := processingOf(waitProcessing(t, tn, eu, id))
	require.Equal(t, "ready", p["state"], "%v", p)
	return id
}

// streamedScene is a 1 000 000-Gaussian scene of the demo customer whose rendition is a
// Streamed SOG (levels of detail), committed early so its conversion runs while the other
// scenes are made.
type streamedScene struct {
	id       string
	uploaded int
}

// commitStreamedScene commits the standing scene with 1 000 000 Gaussians (a PLY without
// harmonics, so the test uploads 62 MB rather than 248) as an integrator's server would send a
// large file: through the Go SDK in parts, with a connection dropped a third of the way and the
// upload resumed; the viewer then draws what those parts made.
func commitStreamedScene(t *testing.T, d *demoHost) streamedScene {
	t.Helper()
	data := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}.PLY(streamedGaussians)
	path := filepath.Join(t.TempDir(), "stand-million.ply")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	tn := d.tenant()
	c, err := splathost.New(env.URL, splathost.WithKeys(tn.PublicKey, tn.SecretKey))
	require.NoError(t, err)
	uploadID := uploadWithDrop(t, c, d.State.Customer, path, int64(len(data)))
	res, err := c.UploadFile(context.Background(), d.State.Customer, path, splathost.UploadOptions{UploadID: uploadID, Title: "Streamed"})
	require.NoError(t, err)
	require.EqualValues(t, len(data), res.Splat.FileSizeBytes)
	return streamedScene{id: res.SplatID, uploaded: len(data)}
}

// streamedGaussians is the size of the Streamed SOG scene: the default threshold
// (SPLATHOST_RENDITION_LOD_MIN).
const streamedGaussians = 1_000_000

// ready waits for the scene's rendition and checks it is a Streamed SOG: a lod-meta.json with
// levels of detail whose files all resolve relative to it on the asset route, down to a coarsest
// level of media.LODCoarsest Gaussians in one file of at most 100 KB (what the viewer draws
// first), under a third of the upload.
func (s streamedScene) ready(t *testing.T, d *demoHost) string {
	t.Helper()
	got := waitProcessing(t, d.tenant(), d.State.Customer, s.id)
	p := processingOf(got)
	require.Equal(t, "ready", p["state"], "%v", p)
	require.Equal(t, "lod", p["renditionType"])
	require.EqualValues(t, streamedGaussians, p["gaussians"])
	metaURL := p["renditionUrl"].(string)
	require.True(t, strings.HasSuffix(metaURL, "/lod-meta.json"), metaURL)
	status, body, _ := fetch(t, metaURL)
	require.Equal(t, 200, status)
	meta, err := media.ParseLODMeta(body)
	require.NoError(t, err)
	require.Equal(t, append([]int{streamedGaussians}, media.LODLevels(streamedGaussians, media.LODCoarsest)...), meta.Counts,
		"level 0 is the whole scene, then fewer Gaussians a level down to the coarsest")
	base := metaURL[:strings.LastIndex(metaURL, "/")+1]
	for _, f := range meta.Filenames {
		status, _, _ := fetch(t, base+f)
		require.Equal(t, 200, status, f)
	}
	coarsest := meta.LevelFiles(len(meta.Counts) - 1)
	require.Len(t, coarsest, 1, "the coarsest level is one file for the whole scene")
	status, unit, _ := fetch(t, base+coarsest[0])
	require.Equal(t, 200, status)
	textures, err := media.SOGTextures(unit)
	require.NoError(t, err)
	require.NotEmpty(t, textures)
	size := len(unit)
	for _, f := range textures {
		status, b, _ := fetch(t, base+path.Join(path.Dir(coarsest[0]), f))
		require.Equal(t, 200, status, f)
		size += len(b)
	}
	t.Logf("coarsest level %s: %d Gaussians, %d bytes", coarsest[0], meta.Counts[len(meta.Counts)-1], size)
	require.LessOrEqual(t, size, 100_000, "the coarsest level is at most 100 KB")
	require.Less(t, p["renditionBytes"].(float64)*3, float64(s.uploaded), "under a third of a PLY without harmonics")
	return s.id
}

// The browser tests (web/tests: node:test driving Debian's Chromium through playwright-core) run
// as three top-level tests, each with its own demo host, so that testrun spreads them over its
// shards: one after another they were the suite's critical path. Node's own output is the
// failure message of each.

// TestBrowserScans: scans stored y-down (as 3DGS training stores them) show upright in every
// format and both engines (orientation-*.test.mjs), and the viewer loads a ready scene's SOG
// rendition instead of the upload and streams a million-Gaussian scene's Streamed SOG
// (rendition.test.mjs).
func TestBrowserScans(t *testing.T) {
	runBrowserTests(t, browserSuite{renditions: true}, browserScanFiles...)
}

var browserScanFiles = []string{"orientation-ply.test.mjs", "orientation-sog.test.mjs", "orientation-spark.test.mjs", "rendition.test.mjs"}

// TestBrowserPages: every page (viewer on every format and both engines, editor, error page,
// demo page, API reference) runs under its Content-Security-Policy with no violation reported by
// any document or worker (csp-*.test.mjs), and the viewer renders every format and honours
// levelData v1: start camera, hotspots, background, exposure, likes, host commands (viewer-*),
// and posts its load events with figures that hold (load-events.test.mjs).
func TestBrowserPages(t *testing.T) {
	runBrowserTests(t, browserSuite{}, browserPageFiles...)
}

var browserPageFiles = []string{"csp-pages.test.mjs", "csp-viewer.test.mjs", "load-events.test.mjs", "viewer-formats.test.mjs",
	"viewer-hotspots.test.mjs", "viewer-like.test.mjs", "viewer-look.test.mjs"}

// TestBrowserEditors: the demo host receives every editor event with the right payloads,
// foreign-origin messages are ignored, a view beacon lands, the secret key never reaches the
// browser, a raw iframe host drives the editor, and editors of one scene share a room, also
// across two gateway processes (room.test.mjs puts one editor on each).
func TestBrowserEditors(t *testing.T) {
	runBrowserTests(t, browserSuite{secondGateway: true}, browserEditorFiles...)
}

var browserEditorFiles = []string{"demo-host.test.mjs", "editor-events.test.mjs", "editor-scene.test.mjs", "origins.test.mjs",
	"raw-iframe.test.mjs", "room-authority.test.mjs", "room.test.mjs", "session-expiring.test.mjs"}

// TestBrowserFilesAreAllRun: every web/tests/*.test.mjs belongs to one of the browser tests
// above, so a new file is never left out.
func TestBrowserFilesAreAllRun(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "web", "tests", "*.test.mjs"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	all := slices.Concat(browserScanFiles, browserPageFiles, browserEditorFiles)
	for _, f := range files {
		require.Contains(t, all, filepath.Base(f), "add it to one of the TestBrowser* tests")
	}
	require.Len(t, all, len(files), "a listed file that does not exist, or one listed twice")
}

// browserSuite is what a group of browser test files needs beyond the demo host and the
// scenes of every format: the costly parts are made only for the group that uses them.
type browserSuite struct {
	// renditions: the standing scene as a training PLY with its rendition ready, and the
	// million-Gaussian scene streamed as a Streamed SOG.
	renditions bool
	// secondGateway: a second gateway process (the split binaries) on the same stack.
	secondGateway bool
}

// runBrowserTests runs node --test on files (in web/tests) against this binary's stack and a
// demo host of their own on its own origin. SPLATHOST_BROWSER_TESTS narrows the run to some
// files while working on them.
func runBrowserTests(t *testing.T, suite browserSuite, files ...string) {
	if only := strings.Fields(os.Getenv("SPLATHOST_BROWSER_TESTS")); len(only) > 0 {
		files = slices.DeleteFunc(files, func(f string) bool {
			return !slices.ContainsFunc(only, func(o string) bool { return filepath.Base(o) == f })
		})
		if len(files) == 0 {
			t.Skip("SPLATHOST_BROWSER_TESTS names none of this test's files")
		}
	}
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	browserDeps(t, root)
	demo := startDemo(t, root, filepath.Join(t.TempDir(), "demo.json"))
	var streamed streamedScene
	if suite.renditions {
		// Committed first, so its conversion runs while the other scenes are made.
		streamed = commitStreamedScene(t, demo)
	}
	scenes, err := json.Marshal(formatScenes(t, demo, fixtures.Gen{Seed: fixtures.DefaultSeed}))
	require.NoError(t, err)
	// The standing scene (y-down, as 3DGS training stores scans) in every format: the viewer
	// must show it upright (orientation.test.mjs).
	stand := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}
	standByFormat := formatScenes(t, demo, stand)
	if suite.renditions {
		// And as training writes it (degree-3 harmonics), large enough for a rendition, which
		// the viewer must load instead of the upload (rendition.test.mjs).
		standByFormat["rendition"] = renditionScene(t, demo, stand)
		// And with a million Gaussians: a Streamed SOG, which the viewer streams.
		standByFormat["streamed"] = streamed.ready(t, demo)
	}
	standScenes, err := json.Marshal(standByFormat)
	require.NoError(t, err)
	secondURL := ""
	if suite.secondGateway {
		secondURL = chaosSplit(t, nil).URL
	}
	// Scene files for the editor's file picker (the quota and new-scene tests upload them) and
	// for tests that commit scenes of their own.
	fixtureDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fixtureDir, "ball.ply"), fixtures.PLY(formatSplats), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fixtureDir, "stand.ply"), stand.PLY(formatSplats), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fixtureDir, "stand.splat"), stand.Splat(formatSplats), 0o644))

	// Node must end before the test binary's own deadline, so its output is still reported.
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(15 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-30*time.Second))
	defer cancel()
	// One test file at a time within a group: each drives a software-rendered Chromium.
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join("tests", f)
	}
	cmd := osexec.CommandContext(ctx, "node", append([]string{"--test", "--test-concurrency=1", "--test-timeout=300000"}, paths...)...)
	cmd.Dir = filepath.Join(root, "web")
	cmd.Env = append(os.Environ(),
		"SPLATHOST_CHROMIUM="+chromium,
		"SPLATHOST_GATEWAY_URL="+env.URL,
		"SPLATHOST_SECOND_GATEWAY_URL="+secondURL,
		"SPLATHOST_DEMO_URL="+demo.URL,
		"SPLATHOST_DEMO_PUBLIC_KEY="+demo.State.PublicKey,
		"SPLATHOST_DEMO_SECRET_KEY="+demo.State.SecretKey,
		"SPLATHOST_DEMO_CUSTOMER="+demo.State.Customer,
		"SPLATHOST_SAMPLE_SPLAT_ID="+demo.State.SampleSplatID,
		"SPLATHOST_FORMAT_SCENES="+string(scenes),
		"SPLATHOST_STAND_SCENES="+string(standScenes),
		"SPLATHOST_FIXTURE_DIR="+fixtureDir,
	)
	// Node's runner forks a process per test file, and each starts Chromium: all of them share
	// one process group, which a timeout or the end of the test kills whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	logf, err := os.Create(filepath.Join(env.Dir, t.Name()+".log"))
	require.NoError(t, err)
	defer logf.Close()
	var output bytes.Buffer
	cmd.Stdout = io.MultiWriter(&output, logf)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, spawn.Start(cmd))
	runErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever a test file left behind
	if runErr != nil {
		t.Fatalf("node --test %s failed (%v):\n%s", strings.Join(files, " "), runErr, redact(output.String(), demo.State.SecretKey))
	}
	// The run's summary (node prints "# pass N" and "# fail N" last) proves tests ran.
	require.Regexp(t, `(?m)^# pass [1-9]\d*$`, output.String())
	require.Regexp(t, `(?m)^# fail 0$`, output.String())
	t.Log(redact(output.String(), demo.State.SecretKey))
}

// redact keeps a secret out of test logs (CI prints them).
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "msk_[redacted]")
}

// TestDemoHostKeepsItsTenant: a restarted demo host reuses the account, keys and sample scene
// recorded in its state file; the sample is the README's hero (the column on its ground plane),
// which an older run's state, whose sample is the ball, gains on its next start without losing
// its tenant; and a new tenant is made once those keys stop working (here the operator revoked
// the integration).
func TestDemoHostKeepsItsTenant(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	stateFile := filepath.Join(t.TempDir(), "demo.json")
	first := startDemo(t, root, stateFile)
	first.Stop()
	raw, err := os.ReadFile(stateFile)
	require.NoError(t, err)
	info, err := os.Stat(stateFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the state file holds the secret key")
	require.Contains(t, string(raw), first.State.SecretKey)
	requireHeroSample(t, first)

	second := startDemo(t, root, stateFile)
	require.Equal(t, first.State, second.State, "a restart keeps the tenant and the sample scene")
	r := do(t, "GET", "/api/v1/splats?limit=100", second.tenant().keys(second.State.Customer), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Len(t, r.Body["splats"], 1, "the sample is seeded once")
	second.Stop()

	// The state file of a run from before the hero: its sample is the ball, and it names no scene.
	tn, eu := second.tenant(), second.State.Customer
	ballURL := uploadFile(t, tn, eu, "sample.ply", "application/ply", fixtures.PLY(formatSplats))
	r = do(t, "POST", "/api/v1/splats", tn.keys(eu), map[string]any{"title": "Sample scene", "splatUrl": ballURL})
	require.Equal(t, 201, r.Status, string(r.Raw))
	ball := r.Body["splatId"].(string)
	var older map[string]any
	require.NoError(t, json.Unmarshal(raw, &older))
	older["sampleSplatId"] = ball
	delete(older, "sampleScene")
	b, err := json.Marshal(older)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stateFile, b, 0o600))
	upgraded := startDemo(t, root, stateFile)
	require.Equal(t, first.State.IntegrationID, upgraded.State.IntegrationID, "the older run's tenant is kept")
	require.Equal(t, first.State.SecretKey, upgraded.State.SecretKey)
	require.NotEqual(t, ball, upgraded.State.SampleSplatID, "the ball is no longer the sample")
	requireHeroSample(t, upgraded)
	upgraded.Stop()

	r = do(t, "POST", "/admin/v1/integrations/"+first.State.IntegrationID+"/revoke", admin(), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	third := startDemo(t, root, stateFile)
	require.NotEqual(t, first.State.IntegrationID, third.State.IntegrationID)
	require.NotEqual(t, first.State.SampleSplatID, third.State.SampleSplatID)
	requireHeroSample(t, third)
}

// requireHeroSample checks that the demo's recorded sample is the hero scene: a scene of its
// customer titled "Sample scene" whose file is the standing scene's PLY, byte for byte, at the
// size cmd/demo seeds (3000 splats, as formatSplats), and that the state file says so.
func requireHeroSample(t *testing.T, d *demoHost) {
	t.Helper()
	require.Equal(t, "stand", d.State.SampleScene)
	r := do(t, "GET", "/api/v1/splats/"+d.State.SampleSplatID, d.tenant().keys(d.State.Customer), nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "Sample scene", splatOf(r)["title"])
	file := fetchAsset(t, "GET", splatOf(r)["splatUrl"].(string), nil)
	require.Equal(t, 200, file.status, string(file.body))
	hero := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}.PLY(formatSplats)
	require.True(t, bytes.Equal(hero, file.body), "the sample's file is not the standing scene (%d bytes)", len(file.body))
}
