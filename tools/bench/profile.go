package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/testenv"
)

// profileProduct runs one more load run of side, not counted, while it takes a CPU profile and
// an allocation profile (the delta over the same seconds) of every product process of st, and
// writes them to dir as NAME-LABEL.cpu.pb.gz and NAME-LABEL.allocs.pb.gz for `go tool pprof`.
// The processes serve /debug/pprof only when the stack was started with config.PprofEnv=1.
func profileProduct(ctx context.Context, st *testenv.Stack, side Side, dir, label string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	secs := max(1, int(side.Load.Duration/time.Second))
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(st.State.Processes))
	for _, p := range st.State.Processes {
		if !isProductProcess(p.Name) {
			continue
		}
		for _, kind := range []string{"profile", "allocs"} {
			wg.Go(func() {
				// Wait out the warm-up, so the profile sees the steady state only.
				time.Sleep(side.Load.Warmup)
				name := p.Name + "-" + label + map[string]string{"profile": ".cpu", "allocs": ".allocs"}[kind] + ".pb.gz"
				if err := fetchProfile(ctx, p.URL, st.State.AdminToken, kind, secs, filepath.Join(dir, name)); err != nil {
					errs <- fmt.Errorf("%s %s: %w", p.Name, kind, err)
				}
			})
		}
	}
	_, loadErr := RunLoad(ctx, side.Load)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return loadErr
}

// fetchProfile saves base/debug/pprof/KIND?seconds=SECS to path.
func fetchProfile(ctx context.Context, base, adminToken, kind string, secs int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/"+kind+"?seconds="+strconv.Itoa(secs), nil)
	if err != nil {
		return err
	}
	// Every process's profiles sit behind the admin token, as its metrics do.
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d (is %s=1 set?)", resp.StatusCode, config.PprofEnv)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
