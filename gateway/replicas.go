package gateway

import (
	"context"
	"errors"
	"fmt"
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
// Requests take the replicas in turn, so each gets its share whatever the pooled connections
// do; a replica that refuses the connection is skipped for the others at once (failover), and
// only when every one refuses does the caller's retry with backoff take over.
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

// start is the index of the replica the next request tries first.
func (r *replicaSet) start() int {
	if len(r.hosts) == 1 {
		return 0
	}
	return int((r.next.Add(1) - 1) % uint32(len(r.hosts)))
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

// Do sends req to the next replica in turn, with its Host; when a replica cannot have received
// it (failureOf: notReceived, a refused connection above all) the next is tried at once, each
// replica once. It returns the last replica's error.
func (p *replicaPool) Do(req *fasthttp.Request, resp *fasthttp.Response) error {
	first := p.set.start()
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
