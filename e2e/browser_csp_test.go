//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
)

// TestBrowserCSP runs web/tests/csp-*.test.mjs (node:test driving Debian's Chromium, as
// TestBrowser does) against this binary's stack and a demo host: the viewer renders a scene of
// every format (both engines, their WebAssembly and workers), two editors share a room, an
// editor saves (its thumbnail PUT to the object store), and the error page, the demo page and
// the API reference load, all under their Content-Security-Policy with no violation reported by
// any document or worker; a canary shows an inline script is blocked and recorded. TestBrowser
// runs the same files among the others.
func TestBrowserCSP(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	browserDeps(t, root)
	demo := startDemo(t, root, filepath.Join(t.TempDir(), "demo.json"))
	scenes, err := json.Marshal(formatScenes(t, demo, fixtures.Gen{Seed: fixtures.DefaultSeed}))
	require.NoError(t, err)
	fixtureDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fixtureDir, "ball.ply"), fixtures.PLY(formatSplats), 0o644))

	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-30*time.Second))
	defer cancel()
	cmd := osexec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "--test-timeout=300000", "tests/csp-viewer.test.mjs", "tests/csp-pages.test.mjs")
	cmd.Dir = filepath.Join(root, "web")
	cmd.Env = append(os.Environ(),
		"SPLATHOST_CHROMIUM="+chromium,
		"SPLATHOST_GATEWAY_URL="+env.URL,
		"SPLATHOST_DEMO_URL="+demo.URL,
		"SPLATHOST_DEMO_PUBLIC_KEY="+demo.State.PublicKey,
		"SPLATHOST_DEMO_SECRET_KEY="+demo.State.SecretKey,
		"SPLATHOST_DEMO_CUSTOMER="+demo.State.Customer,
		"SPLATHOST_SAMPLE_SPLAT_ID="+demo.State.SampleSplatID,
		"SPLATHOST_FORMAT_SCENES="+string(scenes),
		"SPLATHOST_STAND_SCENES={}",
		"SPLATHOST_FIXTURE_DIR="+fixtureDir,
	)
	// Chromium's processes share node's process group, which a timeout or the end kills whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	logf, err := os.Create(filepath.Join(env.Dir, "browser-csp-tests.log"))
	require.NoError(t, err)
	defer logf.Close()
	var output bytes.Buffer
	cmd.Stdout = io.MultiWriter(&output, logf)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, spawn.Start(cmd))
	runErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out := redact(output.String(), demo.State.SecretKey)
	if runErr != nil {
		t.Fatalf("node --test web/tests/csp-*.test.mjs failed (%v):\n%s", runErr, out)
	}
	require.Regexp(t, `(?m)^# pass [1-9]\d*$`, out)
	require.Regexp(t, `(?m)^# fail 0$`, out)
	t.Log(out)
}
