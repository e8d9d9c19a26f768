package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReplicasEnv is the environment variable that runs a test binary's product scaled out: set to
// N > 1, Start runs N of each split binary (gateway, user, scene, session, worker and media
// worker) as processes beside the in-process product, and Env.URL is a round-robin load
// balancer in front of the N gateways (balancer), so every test may land on any replica.
// `SPLATHOST_E2E_REPLICAS=2 go test -tags e2e ./e2e/` is the scale-out proof of issue 16.
const ReplicasEnv = "SPLATHOST_E2E_REPLICAS"

// ClusterEnv is the environment variable that runs a test binary against the cluster shape of
// the stack: set to 1, Start runs the runner with --cluster (every engine as a cluster on
// loopback, deploy/README.md "The cluster shape on one machine"). With ReplicasEnv too, the
// product is scaled out as well: `SPLATHOST_E2E_CLUSTER=1 SPLATHOST_E2E_REPLICAS=2 go test
// -tags e2e ./e2e/`.
const ClusterEnv = "SPLATHOST_E2E_CLUSTER"

// replicasFromEnv is ReplicasEnv's value, 1 when unset.
func replicasFromEnv() (int, error) {
	v := os.Getenv(ReplicasEnv)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a positive integer, not %q", ReplicasEnv, v)
	}
	return n, nil
}

// startReplicas runs n of each split binary against the environment's stores and configuration
// (its public URL included: answers name the balancer, as they would name a production load
// balancer) and balances ln's connections over their gateways.
func (e *Env) startReplicas(n int, ln net.Listener) error {
	if err := e.awaitStreamerLead(); err != nil {
		return err
	}
	sp, err := StartSplit(SplitOptions{Config: e.Config, LogDir: e.Dir, Replicas: n})
	if err != nil {
		return err
	}
	e.Replicas = sp
	for i := 1; i <= n; i++ {
		name := "media-worker"
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		if err := sp.AddMediaWorker(name); err != nil {
			return err
		}
	}
	e.balancer = newBalancer(ln, sp.URLs)
	return nil
}

// Balance spreads the connections ln accepts over the gateways (base URLs, Split.URLs), the next
// one at once when one refuses, as the scaled-out harness's own load balancer does: a fault
// test's clients reach a split of its own through it and see a killed gateway as production
// clients behind a load balancer would. stop closes every connection and the listener.
func Balance(ln net.Listener, gateways []string) (stop func()) {
	return newBalancer(ln, gateways).close
}

// newBalancer starts a balancer of ln's connections over the gateways' base URLs.
func newBalancer(ln net.Listener, gateways []string) *balancer {
	b := &balancer{ln: ln, done: make(chan struct{}), served: make(chan struct{})}
	for _, u := range gateways {
		b.gateways = append(b.gateways, strings.TrimPrefix(u, "http://"))
	}
	go b.serve()
	return b
}

// awaitStreamerLead waits until the in-process view streamer holds its advisory lock, before any
// replica's worker could take it: the view tests watch that streamer (its failures during a
// ClickHouse outage), and a replica's would drain the outbox unseen. At this point the streamer's
// is the only session-level advisory lock in the database (rooms and webhook slots take theirs
// per transaction, under load that has not started yet).
func (e *Env) awaitStreamerLead() error {
	deadline := time.Now().Add(time.Minute)
	for {
		var held bool
		err := e.Process.DB.Pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1)`).Scan(&held)
		switch {
		case err != nil:
			return err
		case held:
			return nil
		case time.Now().After(deadline):
			return errors.New("the in-process view streamer did not take its lock within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopReplicas stops the balancer and the replicas.
func (e *Env) stopReplicas() {
	if e.balancer != nil {
		e.balancer.close()
	}
	if e.Replicas != nil {
		e.Replicas.Stop()
	}
}

// balancer is a TCP load balancer: each connection goes to the next gateway in turn (the next
// one at once if that one refuses), like a Kubernetes Service or a cloud network load balancer.
// The bytes pass through unread, so what a test sends (a header no HTTP proxy would forward, a
// WebSocket) reaches a gateway as it would reach the in-process one. The requests of one
// keep-alive connection stay on its gateway, which spreads them over the service replicas.
type balancer struct {
	ln       net.Listener
	gateways []string
	next     atomic.Uint32
	done     chan struct{} // closed when the balancer is closing
	served   chan struct{} // closed when serve has returned
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func (b *balancer) serve() {
	defer close(b.served)
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Go(func() { b.pass(c) })
	}
}

// pass splices the client's connection with a gateway's until either side ends.
func (b *balancer) pass(client net.Conn) {
	var up net.Conn
	var err error
	first := int(b.next.Add(1) - 1)
	for i := range b.gateways {
		if up, err = net.DialTimeout("tcp", b.gateways[(first+i)%len(b.gateways)], 5*time.Second); err == nil {
			break
		}
	}
	if err != nil || !b.track(client, up) {
		client.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	var once sync.Once
	end := func() { once.Do(func() { client.Close(); up.Close() }) }
	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(up, client); end() })
	_, _ = io.Copy(client, up)
	end()
	copies.Wait()
	b.untrack(client, up)
}

// track records an open pair, false once the balancer is closing.
func (b *balancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
		return false
	default:
	}
	if b.conns == nil {
		b.conns = map[net.Conn]struct{}{}
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

func (b *balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns, c)
	}
}

// close stops accepting, closes every open connection and waits for the splices to end.
func (b *balancer) close() {
	b.mu.Lock()
	close(b.done)
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	_ = b.ln.Close()
	<-b.served
	b.wg.Wait()
}
