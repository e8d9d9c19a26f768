package stack

import (
	"fmt"
	"strconv"
	"strings"
)

// The cluster shape's Temporal: every role in processes of its own, on Postgres (databases
// temporal and temporal_visibility on the stack's primary, created and migrated by Temporal's
// own schema tool in `temporal-node setup`), with more than one history shard so the two
// history hosts split them. The processes find each other by ringpop gossip, each on its own
// membership port, seeded from the cluster_membership table every node writes itself into;
// losing one node moves its shards or task queues to the others.
const (
	// temporalShards is the cluster's history shard count, fixed when its database is created.
	temporalShards = 8
	// temporalClusterPorts is how many free ports setupCluster takes: the second frontend's
	// gRPC and HTTP ports, the second history's.
	temporalClusterPorts = 3
	// temporalNodes is how many nodes, each with a membership port of its own.
	temporalNodes = 6
)

// temporalRole is one kind of node in the cluster shape and how many run.
type temporalRole struct {
	role  string
	count int
}

// temporalLayout is the cluster shape's nodes in start order: history and matching before the
// frontends that call them, the internal worker (which dials a frontend) last.
var temporalLayout = []temporalRole{{"history", 2}, {"matching", 1}, {"frontend", 2}, {"worker", 1}}

// setupCluster replaces the single all-roles node with the cluster shape's nodes on pgURL.
// The first node of each role keeps that role's port of Ports; next hands out free ports and
// member free ports below 32768 (cluster_membership stores them as a smallint). The internal
// worker's process also serves the web UI, dialling both frontends.
func (t *temporalStack) setupCluster(pgURL string, next, member func() int) {
	t.pgURL = pgURL
	p := t.ports
	first := map[string]int{"frontend": p.TemporalFrontend, "history": p.TemporalHistory, "matching": p.TemporalMatching, "worker": p.TemporalWorker}
	var nodes []*temporalNode
	var frontends []string
	for _, l := range temporalLayout {
		for i := 1; i <= l.count; i++ {
			port, httpPort := first[l.role], p.TemporalHTTP
			if i > 1 {
				port = next()
				if l.role == "frontend" {
					httpPort = next()
				}
			}
			args := []string{"--roles", l.role, "--postgres", pgURL, "--shards", strconv.Itoa(temporalShards),
				"--" + l.role + "-port", strconv.Itoa(port), "--membership-port", strconv.Itoa(member())}
			if l.role == "frontend" {
				args = append(args, "--frontend-http-port", strconv.Itoa(httpPort))
				frontends = append(frontends, hostPort(port))
			}
			n := t.node(fmt.Sprintf("temporal-%s-%d", l.role, i), port, 0, args...)
			nodes = append(nodes, n)
		}
	}
	w := nodes[len(nodes)-1]
	w.uiPort = p.TemporalUI
	w.args = append(w.args, "--namespace", t.namespace, "--ui-port", strconv.Itoa(p.TemporalUI), "--ui-frontends", strings.Join(frontends, ","))
	t.nodes = nodes
}
