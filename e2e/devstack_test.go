//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
)

// TestDevStackRunsSplitBinaries is `make dev` in miniature: the stack runner starts every part,
// the real gateway, user, scene, session and worker binaries and the demo host, writes
// stack.json with the contract's keys and demoUrl, serves an operator, an integrator and the
// demo page, and stops every process cleanly. It runs two gateways on two session processes
// (--gateways 2 --sessions 2), as a developer trying the multiplayer room across processes does.
func TestDevStackRunsSplitBinaries(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	stack, err := testenv.StartStack(context.Background(), testenv.StackOptions{
		Dir: dir, Services: "split", BinDir: filepath.Join(root, "bin"), Demo: true, Gateways: 2, Sessions: 2,
	})
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			_ = stack.Stop()
		}
	}()
	st := stack.State

	raw, err := os.ReadFile(filepath.Join(dir, "stack.json"))
	require.NoError(t, err)
	var state map[string]any
	require.NoError(t, json.Unmarshal(raw, &state))
	for _, k := range []string{"gatewayUrl", "adminToken", "temporalUiUrl", "objectStoreUrl", "postgresUrl", "clickhouseAddr"} {
		require.NotEmpty(t, state[k], k)
	}

	h := map[string]string{"Authorization": "Bearer " + st.AdminToken}
	r, err := testenv.Do(st.GatewayURL, "POST", "/admin/v1/accounts", h,
		map[string]any{"name": "Dev", "plan": "free", "storageBundleBytes": 1000})
	require.NoError(t, err)
	require.Equal(t, 201, r.Status, string(r.Raw))
	accountID := r.Body["account"].(map[string]any)["id"].(string)
	r, err = testenv.Do(st.GatewayURL, "POST", "/admin/v1/integrations", h, map[string]any{
		"accountId": accountID, "productSlug": "dev.example", "capabilities": []string{"viewer"}})
	require.NoError(t, err)
	require.Equal(t, 201, r.Status, string(r.Raw))
	in := r.Body["integration"].(map[string]any)
	keys := map[string]string{"Authorization": "Bearer " + in["secretKey"].(string),
		"X-Service-Public-Key": in["publicKey"].(string), "X-Service-External-User-Id": "dev-customer"}
	r, err = testenv.Do(st.GatewayURL, "PUT", "/api/v1/external-user", keys, map[string]any{"maxSplats": 2})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 1000, r.Body["externalUser"].(map[string]any)["limitBytes"])
	r, err = testenv.Do(st.GatewayURL, "GET", "/api/v1/external-user/usage", keys, nil)
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	// The second gateway (on the second session process) serves the same stack.
	require.Len(t, st.GatewayURLs, 2)
	require.Equal(t, st.GatewayURL, st.GatewayURLs[0])
	r, err = testenv.Do(st.GatewayURLs[1], "GET", "/api/v1/external-user/usage", keys, nil)
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	var procs []string
	for _, p := range st.Processes {
		procs = append(procs, p.Name)
	}
	require.Subset(t, procs, []string{"gateway", "gateway-2", "session", "session-2"})

	// A scene through the split scene binary: signed upload to the stack's object store, commit,
	// read back.
	body := splatBytes(8)
	r, err = testenv.Do(st.GatewayURL, "POST", "/api/v1/uploads/splat-file", keys,
		map[string]any{"fileName": "dev.splat", "contentType": "application/splat", "fileSize": len(body)})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), body,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	r, err = testenv.Do(st.GatewayURL, "POST", "/api/v1/splats", keys, map[string]any{"title": "dev", "splatUrl": r.Body["fileUrl"]})
	require.NoError(t, err)
	require.Equal(t, 201, r.Status, string(r.Raw))
	id := r.Body["splatId"].(string)
	r, err = testenv.Do(st.GatewayURL, "GET", "/api/v1/splats/"+id, keys, nil)
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, len(body), r.Body["splat"].(map[string]any)["fileSizeBytes"])

	// Its file through the split gateway's asset route, streamed from the scene binary: signed
	// (the scene is private) 200, Range 206, HEAD; the unsigned form 404; the store's own URL 403.
	signed := r.Body["splat"].(map[string]any)["splatUrl"].(string)
	require.True(t, strings.HasPrefix(signed, st.GatewayURL+"/assets/s/"), signed)
	got := fetchAsset(t, "GET", signed, nil)
	require.Equal(t, 200, got.status, string(got.body))
	require.Equal(t, body, got.body)
	part := fetchAsset(t, "GET", signed, map[string]string{"Range": "bytes=32-63"})
	require.Equal(t, 206, part.status, string(part.body))
	require.Equal(t, body[32:64], part.body)
	head := fetchAsset(t, "HEAD", signed, nil)
	require.Equal(t, 200, head.status)
	require.Equal(t, strconv.Itoa(len(body)), head.header.Get("Content-Length"))
	requireAssetNotFound(t, fetchAsset(t, "GET", unsignedOf(t, signed), nil))
	key := signed[strings.Index(signed, "/i/")+1:]
	require.Equal(t, 403, fetchAsset(t, "GET", strings.TrimSuffix(st.ObjectStoreURL, "/")+"/"+st.S3Bucket+"/"+key, nil).status)

	// A file larger than the old forwarder's 64 MiB response buffer streams through both hops
	// without either process holding it: the gateway's and the scene binary's heaps stay far
	// below its size while it is read.
	r, err = testenv.Do(st.GatewayURL, "PATCH", "/admin/v1/accounts/"+accountID, h, map[string]any{"storageBundleBytes": 1 << 30})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	r, err = testenv.Do(st.GatewayURL, "PUT", "/api/v1/external-user", keys, map[string]any{"limitBytes": 1 << 30})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	big := bytes.Repeat(splatBytes(1), 80<<20/32)
	r, err = testenv.Do(st.GatewayURL, "POST", "/api/v1/uploads/splat-file", keys,
		map[string]any{"fileName": "big.splat", "contentType": "application/splat", "fileSize": len(big)})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, 200, putUpload(t, r.Body["uploadUrl"].(string), big,
		map[string]string{"Content-Type": "application/splat", "Cache-Control": cacheControl}))
	r, err = testenv.Do(st.GatewayURL, "POST", "/api/v1/splats", keys, map[string]any{"title": "big", "splatUrl": r.Body["fileUrl"]})
	require.NoError(t, err)
	require.Equal(t, 201, r.Status, string(r.Raw))
	bigURL := r.Body["splat"].(map[string]any)["splatUrl"].(string)
	heaps := map[string]string{"gateway": st.GatewayURL + "/metrics"}
	for _, p := range st.Processes {
		if p.Name == "scene" {
			heaps["scene"] = p.URL + "/metrics"
		}
	}
	peak := map[string]float64{}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			for name, u := range heaps {
				if v := heapInuse(u, h); v > peak[name] {
					peak[name] = v
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	resp, err := http.Get(bigURL)
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	<-sampled
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.EqualValues(t, len(big), n)
	for name := range heaps {
		require.Positive(t, peak[name], name)
		require.Less(t, peak[name], float64(48<<20), "%s heap while streaming 80 MiB", name)
	}
	t.Logf("80 MiB through the split gateway: peak heap in use gateway %.1f MiB, scene %.1f MiB",
		peak["gateway"]/(1<<20), peak["scene"]/(1<<20))

	resp, err = http.Get(st.TemporalUIURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	names := map[string]bool{}
	for _, p := range st.Processes {
		names[p.Name] = true
	}
	for _, want := range []string{"postgres", "clickhouse", "versitygw", "gateway", "user", "scene", "session", "worker", "demo"} {
		require.True(t, names[want], "process %s listed", want)
	}

	// The demo host, on its own origin, serves a page that loads the SDK from this gateway.
	require.NotEmpty(t, st.DemoURL)
	require.NotEqual(t, st.GatewayURL, st.DemoURL)
	resp, err = http.Get(st.DemoURL + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(page), `"gatewayUrl":"`+st.GatewayURL+`"`)

	// Every binary serves its Prometheus metrics, to the admin token only: the public gateway
	// and the services' and worker's private ports alike (TestCanonicalPaths).
	for _, p := range st.Processes {
		switch p.Name {
		case "user", "scene", "session", "worker":
			series := scrape(t, p.URL+"/metrics", h)
			require.Contains(t, series, "go_goroutines", p.Name)
		}
	}
	series := scrape(t, st.GatewayURL+"/metrics", h)
	require.Positive(t, series[`splathost_http_requests_total{method="POST", route="/api/v1/splats", service="gateway", status="201"}`])
	r, err = testenv.Do(st.GatewayURL, "GET", "/metrics", nil, nil)
	require.NoError(t, err)
	require.Equal(t, 401, r.Status)

	// Stop fails if the runner does not exit cleanly or any listed process outlives it.
	stopped = true
	require.NoError(t, stack.Stop(), "every process stops cleanly")
	_, err = os.Stat(filepath.Join(dir, "stack.json"))
	require.True(t, os.IsNotExist(err), "stack.json is removed on shutdown")
}

// heapInuse reads go_memstats_heap_inuse_bytes from a /metrics page (0 when it cannot); it
// runs off the test goroutine, so it reports nothing through t.
func heapInuse(url string, headers map[string]string) float64 {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
