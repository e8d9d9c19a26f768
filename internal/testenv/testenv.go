// Package testenv is the one test harness of splathost. It starts the real infrastructure
// (Postgres, ClickHouse, versitygw, Temporal) once per test binary through the same stack runner
// `make dev` uses, on random loopback ports with temporary data, and runs the whole product
// in-process against it. Tests isolate themselves by creating their own accounts, integrations
// and customers, never by restarting servers.
//
// StartStack is the one way Go code of splathost starts a stack runner: the e2e test of the dev
// stack and the benchmark (tools/bench) use it too.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/splathost/splathost/internal/allinone"
	"github.com/splathost/splathost/internal/boot"
	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/restclient"
	"github.com/splathost/splathost/internal/stackstate"
)

// State is the stack runner's stack.json.
type State = stackstate.State

// Process is one process listed in the state.
type Process = stackstate.Process

// Env is a running test environment.
type Env struct {
	State State
	// Config is what the in-process product runs with.
	Config config.Config
	// URL is the base URL tests send requests to: the in-process gateway, or with ReplicasEnv the
	// load balancer in front of the replicas' gateways.
	URL string
	// ProcessURL is the in-process gateway's own base URL (URL unless ReplicasEnv is set): for
	// tests that watch a cache of the in-process product through its counters.
	ProcessURL string
	// Replicas are the scaled-out split processes behind URL when ReplicasEnv is set.
	Replicas *Split
	// Dir holds the stack's data and every log.
	Dir string
	// Process is the in-process product.
	Process *allinone.Process
	// Traces records the spans of watched traces (nil when an OTLP endpoint is configured).
	Traces *Traces

	stack    *Stack
	ln       net.Listener
	balancer *balancer
	cancel   context.CancelFunc
	served   chan error
}

// RepoRoot finds the repository root (the directory holding go.work).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}

// StackBinary is the stack runner the harness starts: $SPLATHOST_STACK_BIN or bin/stack.
func StackBinary() (string, error) {
	if p := os.Getenv("SPLATHOST_STACK_BIN"); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "stack")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("stack runner %s not built: run `make test` (or `make bin/stack`)", p)
	}
	return p, nil
}

// RenditionMinBytes is the harness's rendition threshold (config.Config.RenditionMinBytes).
const RenditionMinBytes = 256 << 10

// Start brings up the stack and the in-process product.
func Start() (*Env, error) {
	replicas, err := replicasFromEnv()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "splathost-test-")
	if err != nil {
		return nil, err
	}
	// Postgres runs as the postgres user and must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	o := StackOptions{Dir: dir, Services: "none", Cluster: os.Getenv(ClusterEnv) == "1"}
	if o.Cluster {
		// The runner stops the four ClickHouse nodes one after the other, each up to 20 s
		// after a loaded run (its ON CLUSTER mutations queued); killed at 30 s it leaves the
		// last one running (seen after make chaos-cluster).
		o.StopTimeout = 2 * time.Minute
	}
	stack, err := StartStack(context.Background(), o)
	if err != nil {
		return nil, err
	}
	e := &Env{State: stack.State, Dir: dir, stack: stack, Config: stack.State.Config()}
	// Only scenes of 256 KiB and more get a rendition here: the suite commits hundreds of tiny
	// scenes whose conversions would otherwise queue on the media worker for minutes and load
	// the machine under every other test. The rendition tests upload scenes above it.
	e.Config.RenditionMinBytes = RenditionMinBytes
	logf, err := os.Create(filepath.Join(dir, "splathost.log"))
	if err != nil {
		e.Stop()
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(logf, nil))
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	if _, err := boot.Telemetry(ctx, e.Config, "test"); err != nil {
		e.Stop()
		return nil, err
	}
	if e.Config.OTLPEndpoint == "" {
		// Set before the product starts, so every tracer it takes records into Traces.
		e.Traces = NewTraces()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.Traces)))
	}
	// Listen first: the product's public URL (the origin of asset URLs in answers) is this
	// listener's.
	e.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.URL = "http://" + e.ln.Addr().String()
	e.Config.PublicURL = e.URL
	e.Process, err = allinone.Start(ctx, e.Config, log)
	if err != nil {
		_ = e.ln.Close()
		e.Stop()
		return nil, err
	}
	// Scaled out, the in-process product serves on a port of its own and the public one is the
	// balancer's.
	processLn, public := e.ln, e.ln
	if replicas > 1 {
		if processLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			_ = e.ln.Close()
			e.Stop()
			return nil, err
		}
	}
	e.ProcessURL = "http://" + processLn.Addr().String()
	e.served = make(chan error, 1)
	go func() { e.served <- boot.ServeListener(ctx, e.Process.App, processLn, 5*time.Second) }()
	if replicas > 1 {
		if err := e.startReplicas(replicas, public); err != nil {
			_ = public.Close()
			e.Stop()
			return nil, err
		}
	}
	if err := e.waitReady(); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// portTaken reports whether a failed start lost a port to another process between the runner
// choosing it and binding it: the runner's error says so, or one of the stack's logs does
// (Temporal logs its failed gRPC listen and crashes a moment later on the missing listener, so
// the runner's own log shows only the crash). Several stacks starting at once (make test's e2e
// shards) make this race likelier.
func portTaken(dir string, err error) bool {
	if strings.Contains(err.Error(), "already in use") {
		return true
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	more, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, name := range append(logs, more...) {
		if b, err := os.ReadFile(name); err == nil && strings.Contains(string(b), "already in use") {
			return true
		}
	}
	return false
}

// waitReady waits until the in-process product and, scaled out, the balancer's gateways answer
// /readyz.
func (e *Env) waitReady() error {
	for _, base := range []string{e.ProcessURL, e.URL} {
		if err := waitReady(base); err != nil {
			return err
		}
	}
	return nil
}

func waitReady(base string) error {
	var last string
	for i := 0; i < 300; i++ {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = string(b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("product not ready: %s", last)
}

// Stop shuts everything down and removes the temporary data unless SPLATHOST_KEEP_TEST_DIR is
// set (to read the logs after a failure).
func (e *Env) Stop() {
	e.stopReplicas()
	if e.cancel != nil {
		e.cancel()
		if e.served != nil {
			<-e.served
		}
	}
	if e.Process != nil {
		e.Process.Close()
	}
	if err := e.stack.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop stack:", err)
	}
	if os.Getenv("SPLATHOST_KEEP_TEST_DIR") == "" {
		_ = os.RemoveAll(e.Dir)
	} else {
		fmt.Fprintln(os.Stderr, "test data kept in", e.Dir)
	}
}

// CrashClickHouse kills the stack's ClickHouse as a crash would; the product keeps running
// against a ClickHouse that is gone until StartClickHouse. For failure tests: tests of one binary
// share the stack, so a test that calls it must bring ClickHouse back before it ends.
func (e *Env) CrashClickHouse() error { return e.stack.CrashClickHouse(30 * time.Second) }

// StartClickHouse starts the stack's ClickHouse again on the same data and port and returns
// once it answers.
func (e *Env) StartClickHouse() error {
	if err := e.stack.StartClickHouse(filepath.Join(e.Dir, "stack.json"), 2*time.Minute); err != nil {
		return err
	}
	e.State = e.stack.State
	return nil
}

// Response is a decoded JSON response.
type Response = restclient.Response

// Observe, when set, sees every answer Do receives, with the base URL, method and path (with
// its query) it was sent to. The e2e package checks each against the OpenAPI document here, so
// every request of every test, helpers and goroutines included, is held to it.
var Observe func(base, method, path string, r *Response)

// Do sends a request to base+path with headers and a body (a string is sent as is, anything
// else as JSON) and decodes a JSON object response.
func Do(base, method, path string, headers map[string]string, body any) (*Response, error) {
	r, err := restclient.Do(base, method, path, headers, body)
	if err == nil && Observe != nil {
		Observe(base, method, path, r)
	}
	return r, err
}
