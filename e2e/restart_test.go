//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/stackstate"
	"github.com/splathost/splathost/internal/testenv"
)

// stackProcess reads a process of a running stack from its state file, which the runner rewrites
// when it restarts a child.
func stackProcess(t *testing.T, dir, name string) stackstate.Process {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "stack.json"))
	require.NoError(t, err)
	var st stackstate.State
	require.NoError(t, json.Unmarshal(raw, &st))
	for _, p := range st.Processes {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no process %s in the state file", name)
	return stackstate.Process{}
}

// restartedAfter kills name's process with sig and waits until the runner has started a new one
// that answers its readiness check; it returns how long that took.
func restartedAfter(t *testing.T, dir, name string, sig syscall.Signal) time.Duration {
	t.Helper()
	old := stackProcess(t, dir, name)
	t0 := time.Now()
	require.NoError(t, syscall.Kill(old.PID, sig))
	require.Eventually(t, func() bool {
		p := stackProcess(t, dir, name)
		if p.PID == old.PID {
			return false
		}
		resp, err := http.Get(p.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, time.Minute, 20*time.Millisecond, "%s comes back after %s", name, sig)
	return time.Since(t0)
}

// TestSplitStackSurvivesServiceRestarts runs the dev stack with the split binaries, as `make
// dev` does, and kills its services:
//   - the runner restarts a service killed with SIGKILL, logs it with the exit status, and the
//     gateway answers its routes again (the stack used to shut down);
//   - under load from 32 keep-alive clients on a route of each service, restarting that service
//     (SIGTERM, then SIGKILL) costs no request an error: the gateway resends what the service
//     never received, and GETs lost in flight, until the service is back.
func TestSplitStackSurvivesServiceRestarts(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	stack, err := testenv.StartStack(context.Background(), testenv.StackOptions{
		Dir: dir, Services: "split", BinDir: filepath.Join(root, "bin"),
		// 32 clients at full speed on one integration and one session stand in for many: their
		// rate limits would answer 429, and every answer must be a 2xx here.
		Env: []string{"SPLATHOST_RATELIMIT_API_PRO=off", "SPLATHOST_RATELIMIT_SESSION=off"},
	})
	require.NoError(t, err)
	defer func() {
		// Ctrl-C (the runner's stop) still stops everything, the restarted children included.
		var pids []int
		for _, name := range []string{"user", "scene", "session", "worker", "gateway"} {
			pids = append(pids, stackProcess(t, dir, name).PID)
		}
		require.NoError(t, stack.Stop(), "the stack stops cleanly after the restarts")
		for _, pid := range pids {
			require.Error(t, syscall.Kill(pid, 0), "pid %d outlived the stack", pid)
		}
	}()
	gw := stack.State.GatewayURL
	call := func(method, path string, headers map[string]string, body any) *testenv.Response {
		t.Helper()
		r, err := testenv.Do(gw, method, path, headers, body)
		require.NoError(t, err)
		return r
	}

	// A customer with a public scene and a viewer session on it: one GET route per service.
	h := map[string]string{"Authorization": "Bearer " + stack.State.AdminToken}
	r := call("POST", "/admin/v1/accounts", h, map[string]any{"name": "Restarts", "plan": "pro", "storageBundleBytes": 1 << 20})
	require.Equal(t, 201, r.Status, string(r.Raw))
	r = call("POST", "/admin/v1/integrations", h, map[string]any{
		"accountId": r.Body["account"].(map[string]any)["id"], "productSlug": "restarts.example", "capabilities": []string{"viewer"}})
	require.Equal(t, 201, r.Status, string(r.Raw))
	in := r.Body["integration"].(map[string]any)
	keys := map[string]string{"Authorization": "Bearer " + in["secretKey"].(string),
		"X-Service-Public-Key": in["publicKey"].(string), "X-Service-External-User-Id": "restarts"}
	r = call("PUT", "/api/v1/external-user", keys, map[string]any{})
	require.Equal(t, 200, r.Status, string(r.Raw))
	body := splatBytes(8)
	r = call("POST", "/api/v1/uploads/splat-file", keys,
		map[string]any{"fileName": "r.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), body,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	r = call("POST", "/api/v1/splats", keys, map[string]any{"title": "r", "splatUrl": r.Body["fileUrl"], "visibility": "public"})
	require.Equal(t, 201, r.Status, string(r.Raw))
	id := r.Body["splatId"].(string)
	r = call("POST", "/api/editor/embed-sessions", map[string]string{"Authorization": keys["Authorization"]},
		map[string]any{"publicKey": in["publicKey"], "type": "viewer", "splatId": id})
	require.Equal(t, 201, r.Status, string(r.Raw))
	session := map[string]string{"Authorization": "Bearer " + r.Body["sessionToken"].(string)}
	routes := []struct {
		service, path string
		headers       map[string]string
	}{
		{"user", "/api/v1/external-user/usage", keys},
		{"scene", "/api/v1/splats/" + id, keys},
		{"session", "/api/embed/splats/" + id, session},
	}
	for _, rt := range routes {
		require.Equal(t, 200, call("GET", rt.path, rt.headers, nil).Status, rt.path)
	}

	t.Run("a killed service is restarted", func(t *testing.T) {
		took := restartedAfter(t, dir, "scene", syscall.SIGKILL)
		t.Logf("scene back in %s", took)
		require.Equal(t, 200, call("GET", routes[1].path, keys, nil).Status)
		log, err := os.ReadFile(stack.LogPath)
		require.NoError(t, err)
		require.Contains(t, string(log), "child exited; restarting")
		require.Contains(t, string(log), "signal: killed")
	})

	for _, rt := range routes {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(fmt.Sprintf("%s restarted with %s under load", rt.service, sig), func(t *testing.T) {
				client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				var ok, sent atomic.Int64
				var mu sync.Mutex
				bad := map[string]int{}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for i := 0; i < 32; i++ {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							req, _ := http.NewRequest("GET", gw+rt.path, nil)
							for k, v := range rt.headers {
								req.Header.Set(k, v)
							}
							resp, err := client.Do(req)
							sent.Add(1)
							if err != nil {
								mu.Lock()
								bad[err.Error()]++
								mu.Unlock()
								continue
							}
							b, _ := io.ReadAll(resp.Body)
							resp.Body.Close()
							if resp.StatusCode/100 == 2 {
								ok.Add(1)
							} else {
								mu.Lock()
								bad[fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))]++
								mu.Unlock()
							}
							time.Sleep(2 * time.Millisecond)
						}
					})
				}
				time.Sleep(500 * time.Millisecond)
				before := ok.Load()
				took := restartedAfter(t, dir, rt.service, sig)
				require.Eventually(t, func() bool { return ok.Load() > before+200 }, time.Minute, 10*time.Millisecond)
				time.Sleep(300 * time.Millisecond)
				close(stop)
				wg.Wait()
				t.Logf("%s back in %s; %d requests", rt.service, took, sent.Load())
				require.Empty(t, bad, "non-2xx answers of %d requests", sent.Load())
			})
		}
	}
}
