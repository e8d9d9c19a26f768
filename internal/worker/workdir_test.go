package worker

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdEnv makes the test binary, run as a helper process, lock the directory it names and wait
// to be killed: a media worker holding its work directory.
const holdEnv = "SPLATHOST_TEST_HOLD_WORKDIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		lock, err := lockDir(dir)
		if err != nil || lock == nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder starts a process that holds dir's work lock, and returns once it does.
func holder(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	return cmd
}

func mkdirWith(t *testing.T, path string, age time.Duration) {
	t.Helper()
	require.NoError(t, os.MkdirAll(path, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path, "scene.ply"), []byte("leftover"), 0o600))
	if age > 0 {
		old := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(path, old, old))
	}
}

// TestClaimWorkDirSweepsWhatDeadWorkersLeft: a worker killed with SIGKILL mid-conversion leaves
// its directory; the next worker to start removes it, and leaves a live worker's directory and
// a young loose one alone.
func TestClaimWorkDirSweepsWhatDeadWorkersLeft(t *testing.T) {
	root := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dead, live := filepath.Join(root, "worker-1-dead"), filepath.Join(root, "worker-2-live")
	mkdirWith(t, dead, 0)
	mkdirWith(t, live, 0)
	killed := holder(t, dead)
	holder(t, live)
	require.NoError(t, killed.Process.Signal(syscall.SIGKILL))
	_, _ = killed.Process.Wait()
	oldLoose, youngLoose := filepath.Join(root, "rendition-aa-1"), filepath.Join(root, "rendition-bb-2")
	mkdirWith(t, oldLoose, 2*time.Hour)
	mkdirWith(t, youngLoose, 0)

	dir, release, err := claimWorkDir(root, time.Hour, log)
	require.NoError(t, err)
	require.NoDirExists(t, dead, "the killed worker's directory is removed")
	require.NoDirExists(t, oldLoose, "a loose directory older than the longest conversion is removed")
	require.FileExists(t, filepath.Join(live, "scene.ply"), "a live worker's directory stays")
	require.DirExists(t, youngLoose, "a loose directory that may be in use stays")

	require.True(t, strings.HasPrefix(filepath.Base(dir), "worker-"), dir)
	require.Equal(t, root, filepath.Dir(dir))
	other, err := lockDir(dir)
	require.NoError(t, err)
	require.Nil(t, other, "the claimed directory is locked while its worker runs")

	// A second worker starting beside it leaves it alone.
	dir2, release2, err := claimWorkDir(root, time.Hour, log)
	require.NoError(t, err)
	require.NotEqual(t, dir, dir2)
	require.DirExists(t, dir)

	release()
	require.NoDirExists(t, dir, "release removes the directory")
	release2()
	require.NoDirExists(t, dir2)
}
