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
// and /readyz details, with the product's SPLATHOST_CLICKHOUSE_DDL_STALL_AFTER): its supervisor
// kills it as a crash would and starts it again at once, which is what mended the stalls of
// issue 40. It runs until Stop begins.
func (s *Stack) healDDL() {
	if s.cluster == nil {
		return
	}
	byHost := map[string]string{} // "host:port" as the cluster names it → engine name
	for _, n := range s.cluster.ch {
		byHost[n.addr()] = n.name
	}
	addrs := strings.Join(s.cluster.chAddrs(), ",")
	after := s.cfg.ClickHouseDDLStallAfter
	healed := map[string]time.Time{}
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
			for _, st := range stalls {
				name := byHost[st.Host]
				if name == "" || time.Since(healed[name]) < ddlHealGrace {
					continue
				}
				s.log.Warn("ClickHouse node's DDL queue stalled; restarting it", "part", name, "task", st.Task,
					"queued", st.Since.UTC().Format(time.RFC3339), "stallAfter", after.String())
				healed[name] = time.Now()
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
