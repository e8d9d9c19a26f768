package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// SearchAttributes are the custom Keyword search attributes the workflows set, so operators can
// find a clone or retention workflow by business key in the Temporal UI.
var SearchAttributes = []string{"integrationId", "externalUserId", "splatId", "sourceSplatId", "renditionPhase", "webhookId", "webhookEvent"}

// namespaceRetention is how long closed workflow histories stay visible in the UI.
const namespaceRetention = 7 * 24 * time.Hour

// TemporalNodeEnv names the temporal-node binary (tools/cmd/temporal-node) the runner spawns.
const TemporalNodeEnv = "SPLATHOST_TEMPORAL_NODE"

// DefaultTemporalNode returns where the temporal-node binary is looked for: $SPLATHOST_TEMPORAL_NODE
// (the Makefile sets it to its tools-cache build), else beside the runner's own executable
// (make links bin/temporal-node there), so a test pointing SPLATHOST_STACK_BIN at a checkout's
// bin/stack gets that checkout's node.
func DefaultTemporalNode() string {
	if p := os.Getenv(TemporalNodeEnv); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return "temporal-node"
	}
	return filepath.Join(filepath.Dir(exe), "temporal-node")
}

// checkTemporalNode reports a missing temporal-node binary before anything starts.
func checkTemporalNode(path string) error {
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return fmt.Errorf("temporal: node binary %s not found: run `make bin/temporal-node` (or set $%s)", path, TemporalNodeEnv)
	}
	return nil
}

// temporalStack is the Temporal server as temporal-node child processes the runner supervises
// like the other engines: one process with every role on SQLite (the single-node stack, named
// "temporal"), or the cluster shape's one role per process on Postgres (temporalCluster).
// The server is linked into that separate binary, built once, so the runner links in seconds.
type temporalStack struct {
	bin       string
	dir       string // DIR/temporal: the SQLite file, the cluster id, the ready files
	logDir    string
	ports     Ports
	namespace string
	log       *slog.Logger
	// nodes in start order; every one is a supervised engine.
	nodes []*temporalNode
	// pgURL is the Postgres server of the cluster shape's nodes; empty on SQLite.
	pgURL  string
	client client.Client
}

// temporalNode is one temporal-node process.
type temporalNode struct {
	name    string // "temporal", or temporal-<role>-N in the cluster shape
	logPath string
	ready   string
	// args are the node's flags apart from the cluster id and ready file.
	args []string
	// addr is the node's gRPC address, uiPort its web UI's port when it serves one.
	addr   string
	uiPort int
	proc   *process
}

func newTemporal(dir, bin string, ports Ports, namespace string, log *slog.Logger) *temporalStack {
	t := &temporalStack{
		bin:       bin,
		dir:       filepath.Join(dir, "temporal"),
		logDir:    filepath.Join(dir, "logs"),
		ports:     ports,
		namespace: namespace,
		log:       log.With("part", "temporal"),
	}
	p := ports
	t.nodes = []*temporalNode{t.node("temporal", p.TemporalFrontend, p.TemporalUI,
		"--roles", "all", "--sqlite", filepath.Join(t.dir, "temporal.db"),
		"--frontend-port", strconv.Itoa(p.TemporalFrontend), "--frontend-http-port", strconv.Itoa(p.TemporalHTTP),
		"--history-port", strconv.Itoa(p.TemporalHistory), "--matching-port", strconv.Itoa(p.TemporalMatching),
		"--worker-port", strconv.Itoa(p.TemporalWorker),
		"--namespace", namespace, "--search-attributes", strings.Join(SearchAttributes, ","),
		"--ui-port", strconv.Itoa(p.TemporalUI), "--ui-frontends", hostPort(p.TemporalFrontend))}
	return t
}

// node describes a temporal-node process named name whose gRPC port is port.
func (t *temporalStack) node(name string, port, uiPort int, args ...string) *temporalNode {
	return &temporalNode{
		name:    name,
		logPath: filepath.Join(t.logDir, name+".log"),
		ready:   filepath.Join(t.dir, name+".ready"),
		args:    append([]string{"--frontend-addr", t.addr()}, args...),
		addr:    hostPort(port),
		uiPort:  uiPort,
	}
}

// addr is the first frontend's gRPC address (stack.json's temporalAddr).
func (t *temporalStack) addr() string { return hostPort(t.ports.TemporalFrontend) }

// frontends are every frontend's gRPC address, the first one first.
func (t *temporalStack) frontends() []string {
	var out []string
	for _, n := range t.nodes {
		if n.name == "temporal" || strings.HasPrefix(n.name, "temporal-frontend-") {
			out = append(out, n.addr)
		}
	}
	return out
}

// uiURL is the web UI.
func (t *temporalStack) uiURL() string { return httpURL(t.ports.TemporalUI) }

// url is what the state file lists for a node: the UI of the node serving it, else its gRPC
// address.
func (n *temporalNode) url() string {
	if n.uiPort > 0 {
		return httpURL(n.uiPort)
	}
	return "tcp://" + n.addr
}

// start creates the schema (cluster shape: Temporal's own schema tool, in temporal-node setup),
// starts every node in order, each once the one before it has started, then waits until the
// frontend answers, the custom search attributes exist and the UI serves pages.
func (t *temporalStack) start(ctx context.Context, timeout time.Duration) error {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	if t.pgURL != "" {
		if err := t.setup(ctx, timeout); err != nil {
			return err
		}
	}
	for _, n := range t.nodes {
		if err := t.startNode(ctx, n, timeout); err != nil {
			return err
		}
	}
	logPath := t.nodes[0].logPath
	err := waitHealthy(ctx, "temporal", nil, logPath, timeout, func(ctx context.Context) error {
		if t.client == nil {
			c, err := client.DialContext(ctx, client.Options{
				HostPort:  t.addr(),
				Namespace: t.namespace,
				Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
			})
			if err != nil {
				return err
			}
			t.client = c
		}
		if _, err := t.client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return err
		}
		return t.ensureSearchAttributes(ctx)
	})
	if err != nil {
		return err
	}
	return waitHealthy(ctx, "temporal ui", nil, logPath, timeout, httpCheck(t.uiURL()+"/", ""))
}

// setup runs `temporal-node setup` on the cluster shape's Postgres and waits for it to finish.
func (t *temporalStack) setup(ctx context.Context, timeout time.Duration) error {
	p, err := startProcess(procSpec{
		name: "temporal-setup", path: t.bin, logPath: filepath.Join(t.logDir, "temporal-setup.log"),
		args: []string{"setup", "--postgres", t.pgURL, "--namespace", t.namespace,
			"--search-attributes", strings.Join(SearchAttributes, ","), "--retention", namespaceRetention.String()},
	})
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.stop(5 * time.Second)
		return fmt.Errorf("temporal setup: start-up interrupted")
	case <-time.After(timeout):
		_ = p.stop(5 * time.Second)
		return fmt.Errorf("temporal setup took over %s; see %s", timeout, p.spec.logPath)
	}
	if p.ExitErr() != nil {
		return p.exitError("creating the schema")
	}
	return nil
}

// startNode starts one node and waits until it reports every role started (its ready file).
func (t *temporalStack) startNode(ctx context.Context, n *temporalNode, timeout time.Duration) error {
	id, err := t.clusterID()
	if err != nil {
		return err
	}
	_ = os.Remove(n.ready)
	n.proc, err = startProcess(procSpec{
		name:    n.name,
		path:    t.bin,
		args:    append(slices.Clone(n.args), "--cluster-id", id, "--ready-file", n.ready),
		logPath: n.logPath,
		// A runner that dies still lets the node stop cleanly (SQLite's WAL checkpoint).
		deathSignal: syscall.SIGTERM,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	return waitHealthy(ctx, n.name, n.proc, n.logPath, timeout, func(context.Context) error {
		_, err := os.Stat(n.ready)
		return err
	})
}

// clusterID returns the cluster's id, generated on first run and stored beside the data: the
// id is persisted in the cluster metadata, so it must not change between restarts.
func (t *temporalStack) clusterID() (string, error) {
	path := filepath.Join(t.dir, "cluster-id")
	b, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), nil
	}
	id := uuid.NewString()
	if err := writeFileAtomic(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("temporal: %w", err)
	}
	return id, nil
}

// ensureSearchAttributes registers the custom search attributes that are missing. A namespace
// created by temporal-node already has them; this covers databases from older runs.
func (t *temporalStack) ensureSearchAttributes(ctx context.Context) error {
	ops := t.client.OperatorService()
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: t.namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range SearchAttributes {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        t.namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

// engines are the nodes as supervised engines, in start order.
func (t *temporalStack) engines(mk func(name, url string, proc func() *process, start func(context.Context, time.Duration) error) *engine) []*engine {
	out := make([]*engine, len(t.nodes))
	for i, n := range t.nodes {
		out[i] = mk(n.name, n.url(), func() *process { return n.proc },
			func(ctx context.Context, timeout time.Duration) error { return t.startNode(ctx, n, timeout) })
	}
	return out
}

// nodeStopTimeout bounds a node's clean shutdown: Temporal's state is in its database, so a
// node killed after it is no worse than one that crashed, and a stack stop stays quick (a
// frontend or matching host otherwise waits for the long polls of workers still connected).
const nodeStopTimeout = 5 * time.Second

// stop closes the client, then stops the nodes in two waves, each node of a wave at once: the
// frontends and the internal worker, then the history and matching hosts they call.
func (t *temporalStack) stop(timeout time.Duration) error {
	if t.client != nil {
		t.client.Close()
	}
	timeout = min(timeout, nodeStopTimeout)
	callers := func(n *temporalNode) bool {
		return n.name == "temporal" || strings.HasPrefix(n.name, "temporal-frontend-") || strings.HasPrefix(n.name, "temporal-worker-")
	}
	var errs []error
	for _, wave := range []bool{true, false} {
		var wg sync.WaitGroup
		waveErrs := make([]error, len(t.nodes))
		for i, n := range t.nodes {
			if p := n.proc; p != nil && callers(n) == wave {
				wg.Go(func() { waveErrs[i] = p.stop(timeout) })
			}
		}
		wg.Wait()
		errs = append(errs, waveErrs...)
	}
	return errors.Join(errs...)
}
