package analytics

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// DDLQueuePath is where ClickHouse queues ON CLUSTER statements in ZooKeeper (its default
// distributed_ddl path, the one the dev cluster and deploy/ configure).
const DDLQueuePath = "/clickhouse/task_queue/ddl"

// ddlTasksRead bounds the queue tasks one check reads: the newest ones. A node's DDL worker
// runs the queue in order, so a node stuck on an older task has not finished the newer ones
// either, and reading the newest is enough to see it (each task costs one ZooKeeper read on
// 18.16, whose system.zookeeper takes one path per query).
const ddlTasksRead = 50

// DDLTask is one ON CLUSTER statement in the distributed DDL queue.
type DDLTask struct {
	// Name is the task's node in the queue (query-0000000042).
	Name string
	// Created is when the initiator queued it.
	Created time.Time
	// Hosts are the nodes that must run it, as "host:port" (the task's own list).
	Hosts []string
	// Finished are the nodes that ran it (with success or an error), as "host:port".
	Finished []string
}

// DDLStall is a cluster node whose DDL worker has stopped: it has not finished a task queued
// for it longer ago than the check's threshold.
type DDLStall struct {
	// Host is the node, "host:port" of its native protocol as the cluster names it.
	Host string `json:"host"`
	// Task is the oldest task it has not finished, and Since when that task was queued.
	Task  string    `json:"task"`
	Since time.Time `json:"since"`
}

// StalledHosts returns the members (the cluster's nodes, "host:port") that have not finished
// a task queued for them before cutoff, each with its oldest such task, ordered by host. A task
// naming a host that is no longer a member (the dev cluster moves its extra nodes to new ports
// on every start) never counts against anyone.
func StalledHosts(tasks []DDLTask, members []string, cutoff time.Time) []DDLStall {
	member := map[string]bool{}
	for _, m := range members {
		member[m] = true
	}
	oldest := map[string]DDLStall{}
	for _, t := range tasks {
		if !t.Created.Before(cutoff) {
			continue // still within the time a healthy node may take
		}
		done := map[string]bool{}
		for _, h := range t.Finished {
			done[h] = true
		}
		for _, h := range t.Hosts {
			if !member[h] || done[h] {
				continue
			}
			if s, ok := oldest[h]; !ok || t.Created.Before(s.Since) {
				oldest[h] = DDLStall{Host: h, Task: t.Name, Since: t.Created}
			}
		}
	}
	out := make([]DDLStall, 0, len(oldest))
	for _, s := range oldest {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// DDLStalls reads the distributed DDL queue of cluster through the node conn is connected to
// and returns its stalled nodes (StalledHosts, with tasks queued more than after ago). It
// reads ZooKeeper through system.zookeeper, which every release has: ClickHouse 18.16 (the dev
// cluster's) has no system.distributed_ddl_queue. Only the newest ddlTasksRead tasks are read.
func DDLStalls(ctx context.Context, conn driver.Conn, cluster string, after time.Duration) ([]DDLStall, error) {
	rows, err := conn.Query(ctx, "SELECT host_name, toUInt16(port) FROM system.clusters WHERE cluster = ?", cluster)
	members, err := collect(rows, err, func(r driver.Rows) (string, error) {
		var host string
		var port uint16
		err := r.Scan(&host, &port)
		return host + ":" + strconv.Itoa(int(port)), err
	})
	if err != nil {
		return nil, fmt.Errorf("read cluster %s's nodes: %w", cluster, err)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("no cluster %s in system.clusters", cluster)
	}
	rows, err = conn.Query(ctx, "SELECT name, value, ctime FROM system.zookeeper WHERE path = ? ORDER BY name DESC LIMIT ?",
		DDLQueuePath, ddlTasksRead)
	tasks, err := collect(rows, err, func(r driver.Rows) (t DDLTask, err error) {
		var entry string
		if err := r.Scan(&t.Name, &entry, &t.Created); err != nil {
			return t, err
		}
		t.Hosts = ddlEntryHosts(entry)
		return t, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the DDL queue %s: %w", DDLQueuePath, err)
	}
	cutoff := time.Now().Add(-after)
	for i := range tasks {
		if !tasks[i].Created.Before(cutoff) {
			continue // not judged yet: its finished list is not needed
		}
		rows, err := conn.Query(ctx, "SELECT name FROM system.zookeeper WHERE path = ?", DDLQueuePath+"/"+tasks[i].Name+"/finished")
		names, err := collect(rows, err, func(r driver.Rows) (n string, err error) { return n, r.Scan(&n) })
		if err != nil {
			return nil, fmt.Errorf("read DDL task %s: %w", tasks[i].Name, err)
		}
		for _, n := range names {
			tasks[i].Finished = append(tasks[i].Finished, unescapeHost(n))
		}
	}
	return StalledHosts(tasks, members, cutoff), nil
}

// ddlEntryHosts reads the hosts a DDL task's entry (its ZooKeeper node's value) addresses: the
// line "hosts: ['127%2E0%2E0%2E1:9000','…']", each host escaped as a file name.
func ddlEntryHosts(entry string) []string {
	var out []string
	for _, line := range strings.Split(entry, "\n") {
		list, ok := strings.CutPrefix(line, "hosts: ")
		if !ok {
			continue
		}
		for _, quoted := range strings.Split(strings.Trim(list, "[]"), ",") {
			if h := strings.Trim(strings.TrimSpace(quoted), "'`"); h != "" {
				out = append(out, unescapeHost(h))
			}
		}
	}
	return out
}

// unescapeHost turns a host id of the DDL queue ("127%2E0%2E0%2E1:9000": ClickHouse escapes the
// host part as a file name) into the "host:port" system.clusters gives.
func unescapeHost(id string) string {
	if s, err := url.PathUnescape(id); err == nil {
		return s
	}
	return id
}

// DDLWatch checks a view store's cluster for stalled DDL workers (DDLStalls), keeping each
// answer for a few seconds so the metric's scrapes and /readyz share one read of ZooKeeper.
type DDLWatch struct {
	// Views is the store whose cluster is watched; on one server there is nothing to watch.
	Views *Views
	// After is how long a task may stay unfinished by a node before the node counts as stalled.
	After time.Duration

	mu     sync.Mutex
	at     time.Time
	stalls []DDLStall
}

// ddlWatchKeep is how long DDLWatch keeps an answer.
const ddlWatchKeep = 10 * time.Second

// Stalls returns the stalled nodes: none on one server (no cluster, no DDL queue).
func (w *DDLWatch) Stalls(ctx context.Context) ([]DDLStall, error) {
	l, err := w.Views.layout(ctx)
	if err != nil || l.cluster == "" {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.at.IsZero() && time.Since(w.at) < ddlWatchKeep {
		return w.stalls, nil
	}
	stalls, err := DDLStalls(ctx, w.Views.conn, l.cluster, w.After)
	if err != nil {
		return nil, err
	}
	w.at, w.stalls = time.Now(), stalls
	return stalls, nil
}
