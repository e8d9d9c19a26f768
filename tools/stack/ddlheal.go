package stack

import (
	"context"
	"strings"
	"time"

	"github.com/splathost/splathost/analytics"
)

// ddlHealEvery is how often the cluster shape's runner reads the ClickHouse DDL queue.
const ddlHealEvery = 10 * time.Second

// ddlHealGrace is how long a restarted node is left to catch up on the queue (a restarted DDL
// worker runs every task it has not finished, in order) before it may be restarted again.
const ddlHealGrace = 2 * time.Minute

// healDDL, in the cluster shape, restarts every ClickHouse node whose distributed DDL queue has
// stopped (analytics.DDLStalls, the check behind the worker's splathost_clickhouse_ddl_stalled_hosts
// and /readyz details, with the product's SPLATHOST_CLICKHOUSE_DDL_STALL_AFTER; ddlHealer says
// when): its supervisor kills it as a crash would and starts it again at once, which is what
// mended the stalls of issue 40. It runs until Stop begins.
func (s *Stack) healDDL() {
	if s.cluster == nil {
		return
	}
	h := newDDLHealer(s.cluster.ch)
	addrs := strings.Join(s.cluster.chAddrs(), ",")
	after := s.cfg.ClickHouseDDLStallAfter
	s.engineWG.Go(func() {
		ctx, cancel := s.untilStopping()
		defer cancel()
		for s.pause(ddlHealEvery) {
			stalls, err := ddlStalls(ctx, addrs, after)
			if err != nil {
				// ZooKeeper or every node away: the supervisors and the next round see to it.
				s.log.Debug("DDL queue not read", "error", err)
				continue
			}
			for name, st := range h.round(stalls, time.Now()) {
				s.log.Warn("ClickHouse node's DDL queue stalled; restarting it", "part", name, "task", st.Task,
					"queued", st.Since.UTC().Format(time.RFC3339), "stallAfter", after.String())
				if e := s.engine(name); e != nil {
					select {
					case e.restart <- struct{}{}:
					default:
					}
				}
			}
		}
	})
}

// ddlHealer decides, read after read of the DDL queue, which ClickHouse nodes to restart.
type ddlHealer struct {
	// byHost names each node's engine by the "host:port" the cluster calls it.
	byHost map[string]string
	// seen is the previous read's stalls (engine → its oldest unfinished task).
	seen map[string]string
	// healed is when each engine was last restarted.
	healed map[string]time.Time
}

func newDDLHealer(nodes []*clickhouse) *ddlHealer {
	h := &ddlHealer{byHost: map[string]string{}, seen: map[string]string{}, healed: map[string]time.Time{}}
	for _, n := range nodes {
		h.byHost[n.addr()] = n.name
	}
	return h
}

// round takes one read's stalls and returns the engines to restart now, with their stall. A
// node is restarted when two reads in a row find it stalled on the same task (nodes catching up
// on a queue that grew while ZooKeeper was away get a read to move), and not again within
// ddlHealGrace. A host that is not a node of this stack is left alone.
func (h *ddlHealer) round(stalls []analytics.DDLStall, now time.Time) map[string]analytics.DDLStall {
	previous := h.seen
	h.seen = map[string]string{}
	out := map[string]analytics.DDLStall{}
	for _, st := range stalls {
		name := h.byHost[st.Host]
		if name == "" {
			continue
		}
		h.seen[name] = st.Task
		if previous[name] != st.Task || now.Sub(h.healed[name]) < ddlHealGrace {
			continue
		}
		h.healed[name] = now
		out[name] = st
	}
	return out
}

// ddlStalls reads the DDL queue through the first node of addrs that answers (a stopped node
// costs its handshake timeout), on a connection of its own for one round.
func ddlStalls(ctx context.Context, addrs string, after time.Duration) ([]analytics.DDLStall, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := analytics.Open(ctx, addrs, "default")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return analytics.DDLStalls(ctx, conn, ClickHouseCluster, after)
}
