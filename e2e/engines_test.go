//go:build e2e

package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// TestEngineKilledIsRestarted kills ClickHouse with SIGKILL: the stack runner starts it again
// on the same data and port by itself (it no longer stops the whole stack), lists the new pid,
// and the product is ready again. The Postgres and versitygw kills run under load in
// TestChaosEngineKills.
func TestEngineKilledIsRestarted(t *testing.T) {
	before, err := env.EnginePID(testenv.EngineClickHouse)
	require.NoError(t, err)
	took, err := env.KillEngine(testenv.EngineClickHouse)
	require.NoError(t, err)
	after, err := env.EnginePID(testenv.EngineClickHouse)
	require.NoError(t, err)
	require.NotEqual(t, before, after, "a new process")
	require.False(t, testenv.PIDRunning(before), "the killed one is gone")
	t.Logf("clickhouse back in %s", took)
	for _, p := range env.State.Processes {
		if p.Name == testenv.EngineClickHouse {
			require.Equal(t, env.State.ClickHouseHTTPURL, p.URL, "same port")
			require.Equal(t, after, p.PID)
		}
	}
	resp, err := http.Get(env.State.ClickHouseHTTPURL + "/ping")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Eventually(t, func() bool {
		resp, err := http.Get(env.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, eventuallyWait, 100*time.Millisecond, "the product is ready again")
}

// TestEnginePauseAndResume freezes versitygw with PauseEngine (SIGSTOP: the process exists
// but answers nothing, which the runner does not mistake for a crash) and thaws it with
// ResumeEngine: the same process answers again.
func TestEnginePauseAndResume(t *testing.T) {
	pid, err := env.EnginePID(testenv.EngineVersityGW)
	require.NoError(t, err)
	require.NoError(t, env.PauseEngine(testenv.EngineVersityGW))
	paused := true
	t.Cleanup(func() {
		if paused {
			require.NoError(t, env.ResumeEngine(testenv.EngineVersityGW))
		}
	})
	require.Eventually(t, func() bool { return procState(pid) == "T" }, 5*time.Second, 20*time.Millisecond, "stopped")
	c := &http.Client{Timeout: 500 * time.Millisecond}
	_, err = c.Get(env.State.ObjectStoreURL)
	require.Error(t, err, "a paused store answers nothing")
	require.NoError(t, env.ResumeEngine(testenv.EngineVersityGW))
	paused = false
	require.Eventually(t, func() bool {
		resp, err := c.Get(env.State.ObjectStoreURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, 5*time.Second, 50*time.Millisecond, "answers again")
	now, err := env.EnginePID(testenv.EngineVersityGW)
	require.NoError(t, err)
	require.Equal(t, pid, now, "the same process: a pause is not a crash")
}

// procState is the state letter of /proc/PID/stat ("" when the process is gone).
func procState(pid int) string {
	f, err := testenv.ProcStatFields(pid)
	if err != nil || len(f) == 0 {
		return ""
	}
	return f[0]
}
