package gateway

import (
	"context"
	"errors"
	"fmt"
	"github.com/splathost/splathost/internal/affinity"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/splathost/splathost/internal/httpx"
)

// replicaSet is the processes of one service a gateway forwards to: an upstream setting names
// one (http://host:port) or several, separated by commas (SPLATHOST_SCENE_URL=http://a,http://b).
//
// A request of an integration goes to the replica its id hashes to, from every gateway alike:
// the services cache rows in memory and learn of another process's change by NOTIFY, a few
// milliseconds later, so an integrator's read right after its write (a scene made public, then
// read by another customer) must reach the process that made the change to see it, as it does
// when one process serves everything. Many integrations spread over the replicas. Requests
// without an integration (the operator's, the public asset route) take the replicas in turn.
// A replica that refuses the connection is skipped for the next at once (failover), and only
// when every one refuses does the caller's retry with backoff take over.
type replicaSet struct {
	hosts []string
	next  atomic.Uint32
}

// newReplicaSet parses an upstream setting.
func newReplicaSet(base string) (*replicaSet, error) {
	var hosts []string
	for _, part := range strings.Split(base, ",") {
		part = strings.TrimSpace(part)
		u, err := url.Parse(part)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("upstream url %q: want http://host:port, or several separated by commas", part)
		}
		hosts = append(hosts, u.Host)
	}
	return &replicaSet{hosts: hosts}, nil
}

// start is the index of the replica a request with the affinity key tries first: the key's
// (FNV-1a) when there is one, the next in turn otherwise.
func (r *replicaSet) start(key string) int {
	n := uint32(len(r.hosts))
	if n == 1 {
		return 0
	}
	if key != "" {
		return affinity.Replica(key, len(r.hosts))
	}
	return int((r.next.Add(1) - 1) % n)
}

// affinityKey is the key that picks a request's replica: its caller's integration.
func affinityKey(c *fiber.Ctx) string {
	if caller := httpx.CallerOf(c); caller != nil {
		return caller.IntegrationID
	}
	return ""
}

// String names the replicas in logs and errors.
func (r *replicaSet) String() string { return strings.Join(r.hosts, ",") }

// replicaPool is a keep-alive connection pool per replica of one service.
type replicaPool struct {
	set     *replicaSet
	clients []*fasthttp.HostClient
}

// newReplicaPool parses base and builds each replica's pool with newClient.
func newReplicaPool(base string, newClient func(addr string) *fasthttp.HostClient) (*replicaPool, error) {
	set, err := newReplicaSet(base)
	if err != nil {
		return nil, err
	}
	p := &replicaPool{set: set}
	for _, h := range set.hosts {
		p.clients = append(p.clients, newClient(h))
	}
	return p, nil
}

// Do sends req to the replica of the affinity key (replicaSet.start), with its Host; when a
// replica cannot have received it (failureOf: notReceived, a refused connection above all) the
// next is tried at once, each replica once. It returns the last replica's error.
func (p *replicaPool) Do(key string, req *fasthttp.Request, resp *fasthttp.Response) error {
	first := p.set.start(key)
	var err error
	for i := range p.clients {
		c := p.clients[(first+i)%len(p.clients)]
		req.Header.SetHost(c.Addr)
		if err = c.Do(req, resp); err == nil || failureOf(err) != notReceived {
			return err
		}
	}
	return err
}

// CloseIdleConnections closes the idle connections to every replica.
func (p *replicaPool) CloseIdleConnections() {
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
}

// String names the replicas in logs and errors.
func (p *replicaPool) String() string { return p.set.String() }

// upstreamReady checks a service's own readiness endpoint: ready when one of its replicas is,
// since requests fail over to it.
func upstreamReady(base string) httpx.Check {
	return func(ctx context.Context) error {
		set, err := newReplicaSet(base)
		if err != nil {
			return err
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(2 * time.Second)
		}
		var errs []error
		for _, h := range set.hosts {
			status, _, err := fasthttp.GetDeadline(nil, "http://"+h+"/readyz", deadline)
			switch {
			case err != nil:
				errs = append(errs, err)
			case status != fiber.StatusOK:
				errs = append(errs, fmt.Errorf("http://%s/readyz answered %d", h, status))
			default:
				return nil
			}
		}
		return errors.Join(errs...)
	}
}
