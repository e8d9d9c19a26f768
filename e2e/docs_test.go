//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// TestDocsSite opens every page of the docs site (/docs/guides, each guide, each reference page
// and the API reference) in Chromium through this binary's gateway and fails on a link under
// /docs that does not answer 200, on a #fragment its target page lacks, on anything loaded from
// another host, and on a document of docs/ that no link reaches (web/tests/docs-site.mjs).
func TestDocsSite(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	browserDeps(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "node", "--test", "--test-timeout=300000", "tests/docs-site.mjs")
	cmd.Dir = filepath.Join(root, "web")
	cmd.Env = append(os.Environ(), "SPLATHOST_CHROMIUM="+chromium, "SPLATHOST_GATEWAY_URL="+env.URL)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	require.NoError(t, runErr, "node --test web/tests/docs-site.mjs:\n%s", out.String())
	require.Regexp(t, `(?m)^# pass 1$`, out.String())
	require.Regexp(t, `(?m)^# fail 0$`, out.String())
	t.Log(out.String())
}
