//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// quickstartBlock finds the README quickstart's shell blocks (fenced ```sh, indented or not).
var quickstartBlock = regexp.MustCompile("(?ms)^( *)```sh\n(.*?)^ *```")

// quickstartScript turns the README's quickstart into a bash script against this binary's
// stack: the same commands, with the placeholders a reader fills in by hand (<ACCOUNT>, the keys,
// <SPLAT ID>, <sessionToken>, <WEBHOOK ID>) taken from the previous commands' output. Every
// command must succeed and no answer may be an error envelope. `make dev` (the reader's first
// terminal) and the resumed-upload example (it needs an interrupted upload) are not run.
func quickstartScript(t *testing.T, readme string) string {
	t.Helper()
	start := strings.Index(readme, "## Quickstart")
	require.GreaterOrEqual(t, start, 0, "the README has a quickstart")
	section := readme[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	subst := strings.NewReplacer(
		"http://127.0.0.1:8080", "$GATEWAY", "mpk_...", "$NEW_PK", "msk_...", "$NEW_SK",
		"<ACCOUNT>", "$ACCOUNT", "<SPLAT ID>", "$SPLAT", "<sessionToken>", "$TOKEN",
		"<WEBHOOK ID>", "$WEBHOOK", "/tmp/scenes", "$SCENES",
		// The receiver's port: inside the node one-liner's single quotes, then in its URL.
		".listen(9000)", `.listen('"$HOOK_PORT"')`, "9000", "$HOOK_PORT")
	var b strings.Builder
	b.WriteString("set -u\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n" +
		"fail() { echo \"QUICKSTART FAILED: $1\"; exit 1; }\n")
	commands := 0
	for _, m := range quickstartBlock.FindAllStringSubmatch(section, -1) {
		block := m[2]
		if strings.Contains(block, "make dev") || strings.Contains(block, "--resume") {
			continue
		}
		var lines []string
		for _, l := range strings.Split(block, "\n") {
			lines = append(lines, strings.TrimPrefix(l, m[1]))
		}
		joined := strings.ReplaceAll(strings.Join(lines, "\n"), "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			cmd := subst.Replace(line)
			if i := strings.Index(cmd, "   #"); i >= 0 { // a trailing comment
				cmd = strings.TrimSpace(cmd[:i])
			}
			commands++
			if strings.HasPrefix(cmd, "export ") || strings.HasSuffix(cmd, "&") {
				fmt.Fprintf(&b, "%s\n", cmd)
				if strings.HasSuffix(cmd, "&") {
					b.WriteString("sleep 1\n")
				}
				continue
			}
			fmt.Fprintf(&b, "echo %q\nout=$( %s 2>&1 ) || { printf '%%s\\n' \"$out\"; fail %q; }\nprintf '%%s\\n' \"$out\"\n", "$ "+line, cmd, line)
			fmt.Fprintf(&b, "case \"$out\" in *'\"status\":\"error\"'*) fail %q;; esac\n", line)
			switch {
			case strings.Contains(cmd, "accounts create"):
				b.WriteString("ACCOUNT=$(grep -oE '[0-9a-f]{24}' <<<\"$out\" | head -1)\n")
			case strings.Contains(cmd, "integrations create"):
				b.WriteString("NEW_PK=$(grep -oE 'mpk_[A-Za-z0-9_-]{43}' <<<\"$out\" | head -1); NEW_SK=$(grep -oE 'msk_[A-Za-z0-9_-]{43}' <<<\"$out\" | head -1)\n")
			case strings.Contains(cmd, "splathostctl upload") && !strings.Contains(b.String(), "SPLAT=$("):
				b.WriteString("SPLAT=$(grep -oE '[0-9a-f]{24}' <<<\"$out\" | head -1)\n")
			case strings.Contains(cmd, "embed-sessions"):
				b.WriteString("TOKEN=$(jq -r .sessionToken <<<\"$out\")\n")
			case strings.Contains(cmd, "webhooks create"):
				b.WriteString("WEBHOOK=$(grep -oE '[0-9a-f]{24}' <<<\"$out\" | head -1)\n")
			}
		}
	}
	require.Greater(t, commands, 8, "the quickstart's commands were found")
	// The receiver prints the deliveries as they arrive: give the last one a moment.
	b.WriteString("sleep 3\n")
	return b.String()
}

// TestQuickstart runs the README's five-minute quickstart, as a reader would type it, against
// this binary's stack: an account and integration through bin/splathostctl, a customer, a
// generated scene uploaded and read back, a viewer session whose page opens, and a webhook
// endpoint whose receiver gets the signed splat.created.
func TestQuickstart(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	script := quickstartScript(t, string(readme))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(env.Config.Environ(), "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"),
		"GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"),
		"SPLATHOST_URL="+env.URL, "GATEWAY="+env.URL, "SCENES="+t.TempDir(), fmt.Sprintf("HOOK_PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, runErr := cmd.CombinedOutput()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	require.NoError(t, runErr, "the quickstart failed:\n%s\n--- script ---\n%s", out, script)
	text := string(out)
	require.Regexp(t, `"state": ?"(ready|pending)"`, text, "the scene reports its processing")
	require.Contains(t, text, `"type":"splat.created"`, "the receiver got the webhook:\n%s", text)
	page := regexp.MustCompile(`(?m)^(http://\S+/embed/viewer\?session=\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, page, "the quickstart printed the viewer's URL:\n%s", text)
	status, _, _ := fetch(t, page[1])
	require.Equal(t, 200, status, "the viewer page opens")
}

// goEnv is `go env NAME`, so the quickstart's `go run` reuses this machine's caches.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := osexec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
