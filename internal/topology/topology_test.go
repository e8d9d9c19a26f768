package topology

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
)

// counter hands out 127.0.0.1:9001, :9002, … in order.
func counter() func() (string, error) {
	n := 9000
	return func() (string, error) { n++; return fmt.Sprintf("127.0.0.1:%d", n), nil }
}

func baseConfig() config.Config {
	return config.Config{
		GatewayAddr: "127.0.0.1:8080", UserAddr: "127.0.0.1:8081", SceneAddr: "127.0.0.1:8082", SessionAddr: "127.0.0.1:8083",
		WorkerHealthAddr: "127.0.0.1:8084", MediaHealthAddr: "127.0.0.1:8085",
		UserURL: "http://127.0.0.1:8081", SceneURL: "http://127.0.0.1:8082", SessionURL: "http://127.0.0.1:8083",
	}
}

func TestPlanReplicas(t *testing.T) {
	first, procs, err := Plan(baseConfig(), Options{Replicas: 2, MediaWorker: true}, counter())
	require.NoError(t, err)
	byName := map[string]Proc{}
	var names []string
	for _, p := range procs {
		byName[p.Name] = p
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"user-2", "scene-2", "session-2", "worker-2", "media-worker-2", "gateway-2"}, names)
	// Every gateway forwards to both replicas of each service, the first one first.
	for _, c := range []config.Config{first, byName["gateway-2"].Config} {
		require.Equal(t, "http://127.0.0.1:8081,"+"http://"+byName["user-2"].Addr, c.UserURL)
		require.Equal(t, "http://127.0.0.1:8082,"+"http://"+byName["scene-2"].Addr, c.SceneURL)
		require.Equal(t, "http://127.0.0.1:8083,"+"http://"+byName["session-2"].Addr, c.SessionURL)
	}
	// Each replica listens on its own address and keeps the others' settings.
	require.Equal(t, byName["scene-2"].Addr, byName["scene-2"].Config.SceneAddr)
	require.Equal(t, "127.0.0.1:8081", byName["scene-2"].Config.UserAddr)
	require.Equal(t, byName["worker-2"].Addr, byName["worker-2"].Config.WorkerHealthAddr)
	require.Equal(t, byName["media-worker-2"].Addr, byName["media-worker-2"].Config.MediaHealthAddr)
	require.Equal(t, byName["gateway-2"].Addr, byName["gateway-2"].Config.GatewayAddr)
	require.Equal(t, "127.0.0.1:8080", first.GatewayAddr)
}

func TestPlanPinned(t *testing.T) {
	first, procs, err := Plan(baseConfig(), Options{Gateways: 3, Sessions: 2}, counter())
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8083", first.SessionURL)
	require.Len(t, procs, 3)
	require.Equal(t, "session-2", procs[0].Name)
	require.Equal(t, "gateway-2", procs[1].Name)
	require.Equal(t, "http://"+procs[0].Addr, procs[1].Config.SessionURL, "gateway 2 on session 2")
	require.Equal(t, "http://127.0.0.1:8083", procs[2].Config.SessionURL, "gateway 3 on session 1")

	_, none, err := Plan(baseConfig(), Options{}, counter())
	require.NoError(t, err)
	require.Empty(t, none)
	_, _, err = Plan(baseConfig(), Options{Replicas: 2, Gateways: 2}, counter())
	require.Error(t, err)
}
