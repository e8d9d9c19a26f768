package stack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// At start-up the primary's role goes to the data directory without standby.signal: the first
// one unless a failover moved it; two primaries or none are refused with what to do.
func TestPGDataDirsByRole(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "postgres"), filepath.Join(dir, "postgres-standby")
	touch := func(path string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, nil, 0o600))
	}
	order := func() (string, string, error) { return pgDataDirsByRole(a, b) }

	p, s, err := order() // a fresh stack
	require.NoError(t, err)
	require.Equal(t, []string{a, b}, []string{p, s})

	touch(filepath.Join(a, "PG_VERSION"))
	touch(filepath.Join(b, "PG_VERSION"))
	touch(filepath.Join(b, "standby.signal"))
	p, s, err = order() // never failed over
	require.NoError(t, err)
	require.Equal(t, []string{a, b}, []string{p, s})

	touch(filepath.Join(a, "standby.signal"))
	_, _, err = order()
	require.ErrorContains(t, err, "neither")

	require.NoError(t, os.Remove(filepath.Join(b, "standby.signal")))
	p, s, err = order() // failed over once: the standby's directory holds the primary
	require.NoError(t, err)
	require.Equal(t, []string{b, a}, []string{p, s})

	require.NoError(t, os.Remove(filepath.Join(a, "standby.signal")))
	_, _, err = order()
	require.ErrorContains(t, err, "both")
}

// The failover commands on a real primary and standby under the runner's supervisors, twice:
// the primary is killed with SIGKILL (the supervisor brings it back writable), `pg-promote` (over the
// control socket, as `bin/stack pg-promote` sends it) leaves a state file whose postgresUrl
// and postgres-primary name the promoted server and no standby; `pg-rebuild` makes the old
// primary its streaming standby with pg_rewind and lists it again. The second time the standby
// is promoted by hand (the runbook's way), with the old primary back writable beside it, and
// `pg-rebuild` alone adopts the promoted server and rebuilds the other. Every commit acknowledged before a kill
// (synchronous replication) is on the promoted server; the second failover brings the roles
// back to the data directories they started in, and they are read back that way at start-up.
func TestPostgresDoubleFailover(t *testing.T) {
	if _, err := os.Stat(filepath.Join(postgresBinDir, "pg_rewind")); err != nil {
		t.Skip("no PostgreSQL 15 (make deps)")
	}
	if _, err := postgresCredential(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(Options{Dir: dir, Services: ServicesNone, Cluster: true}, log)
	require.NoError(t, err)
	ports, err := freePorts(2)
	require.NoError(t, err)
	s.pg = newPostgres(dir, ports[0], log)
	standby := newStandby(dir, ports[1], ports[0], log)
	require.NoError(t, s.placePostgres(standby))
	s.cluster = &clusterNodes{standby: standby}
	s.s3 = &objectStore{} // never started; Stop stops the cluster's gateways
	t.Cleanup(func() { require.NoError(t, s.Stop()) })
	ctx := context.Background()
	require.NoError(t, s.pg.start(ctx, time.Minute))
	require.NoError(t, standby.start(ctx, time.Minute))

	// What Start does once the engines are up, for the two Postgres servers only.
	s.engineList = s.pgEngines(newEngine)
	s.state = State{Cluster: true, PostgresURL: s.pg.url(), PostgresStandbyURL: standby.url()}
	for _, e := range s.engineList {
		s.state.Processes = append(s.state.Processes, Process{Name: e.nameNow(), PID: e.proc().Pid(), URL: e.url})
	}
	s.stateSaved = true
	require.NoError(t, s.updateState(func(*State) {}))
	for _, e := range s.engineList {
		s.superviseEngine(e)
	}
	require.NoError(t, s.serveControl())

	state := func() State {
		b, err := os.ReadFile(s.opts.StateFile)
		require.NoError(t, err)
		var st State
		require.NoError(t, json.Unmarshal(b, &st))
		return st
	}
	process := func(st State, name string) Process {
		for _, p := range st.Processes {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no %s in the state file's processes: %+v", name, st.Processes)
		return Process{}
	}
	exec := func(url, sql string, args ...any) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	count := func(url string) int {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var n int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM acked").Scan(&n))
		return n
	}
	exec(s.state.PostgresURL, "CREATE TABLE acked (n int PRIMARY KEY)")
	acked := 0
	first := s.pg.url()
	dirs := map[string]string{s.pg.url(): s.pg.dataDir, standby.url(): standby.dataDir}

	for round := 1; round <= 2; round++ {
		before := state()
		oldPrimary, oldStandby := before.PostgresURL, before.PostgresStandbyURL
		require.NotEmpty(t, oldStandby, "round %d starts with a standby", round)
		// Commits wait for the standby's flush, so each one acknowledged survives the kill.
		exec(oldPrimary, `ALTER SYSTEM SET synchronous_standby_names = '"postgres-standby"'`)
		exec(oldPrimary, "SELECT pg_reload_conf()")
		require.Eventually(t, func() bool {
			conn, err := pgx.Connect(ctx, oldPrimary)
			if err != nil {
				return false
			}
			defer conn.Close(ctx)
			var st string
			return conn.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'postgres-standby'").Scan(&st) == nil && st == "sync"
		}, 30*time.Second, 50*time.Millisecond, "round %d: the standby is synchronous", round)
		for range 50 {
			acked++
			exec(oldPrimary, "INSERT INTO acked VALUES ($1)", acked)
		}
		require.NoError(t, syscall.Kill(process(before, pgPrimaryName).PID, syscall.SIGKILL))

		var out strings.Builder
		if round == 1 {
			// The supervisor restarts the killed primary, unfenced and writable, as it does
			// under make dev-cluster: pg-promote must stop it before promoting.
			require.Eventually(t, func() bool { ok, _ := serverWritable(ctx, s.pg); return ok }, time.Minute, 20*time.Millisecond)
			require.NoError(t, Control(dir, "pg-promote", &out), "round %d", round)
			t.Logf("round %d pg-promote:\n%s", round, out.String())
		} else {
			// Promoted by hand, as the runbook has an operator do; the rebuild adopts it.
			exec(oldStandby, "SELECT pg_promote(true, 60)")
			require.NoError(t, Control(dir, "pg-rebuild", &out), "round %d", round)
			require.Contains(t, out.String(), "promoted by hand")
		}
		promoted := state()
		require.Equal(t, oldStandby, promoted.PostgresURL, "round %d: postgresUrl names the promoted server\n%s", round, out.String())
		if round == 1 {
			require.Empty(t, promoted.PostgresStandbyURL, "round %d: no standby before the rebuild", round)
		}
		require.Equal(t, oldStandby, process(promoted, pgPrimaryName).URL)
		require.Equal(t, oldPrimary, process(promoted, pgStandbyName).URL)
		require.FileExists(t, filepath.Join(dirs[oldPrimary], "standby.signal"), "round %d: the old primary is fenced", round)
		require.Equal(t, acked, count(promoted.PostgresURL), "round %d: every acknowledged commit is on the promoted server", round)
		acked++
		exec(promoted.PostgresURL, "INSERT INTO acked VALUES ($1)", acked)

		if round == 1 {
			out.Reset()
			require.NoError(t, Control(dir, "pg-rebuild", &out), "round %d", round)
		}
		t.Logf("round %d pg-rebuild:\n%s", round, out.String())
		require.Contains(t, out.String(), "with pg_rewind", "round %d: rewound, not copied afresh", round)
		rebuilt := state()
		require.Equal(t, oldStandby, rebuilt.PostgresURL)
		require.Equal(t, oldPrimary, rebuilt.PostgresStandbyURL, "round %d: the old primary is listed as the standby", round)
		standbyProc := process(rebuilt, pgStandbyName)
		require.Equal(t, oldPrimary, standbyProc.URL)
		require.True(t, pidAlive(standbyProc.PID), "round %d: the standby's listed pid runs", round)
		// The rebuilt standby streams what the new primary commits.
		acked++
		exec(rebuilt.PostgresURL, "INSERT INTO acked VALUES ($1)", acked)
		// Waited on the standby's replay position, not on a clock: it fails only when replay
		// stops moving.
		replayed := func() string {
			conn, err := pgx.Connect(ctx, rebuilt.PostgresStandbyURL)
			if err != nil {
				return err.Error()
			}
			defer conn.Close(ctx)
			var lsn string
			_ = conn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn()::text, '')").Scan(&lsn)
			return lsn
		}
		for mark, moved := replayed(), time.Now(); count(rebuilt.PostgresStandbyURL) != acked; time.Sleep(50 * time.Millisecond) {
			if m := replayed(); m != mark {
				mark, moved = m, time.Now()
			}
			require.Less(t, time.Since(moved), 3*time.Minute, "round %d: the standby's replay stopped at %s", round, mark)
		}
		conn, err := pgx.Connect(ctx, rebuilt.PostgresStandbyURL)
		require.NoError(t, err)
		require.NoError(t, checkStreaming(ctx, conn), "round %d", round)
		conn.Close(ctx)
	}

	// Two failovers bring the roles back; a later start reads them from the data directories.
	require.Equal(t, first, state().PostgresURL)
	p, sb, err := pgDataDirsByRole(filepath.Join(dir, "postgres"), filepath.Join(dir, "postgres-standby"))
	require.NoError(t, err)
	require.Equal(t, []string{dirs[state().PostgresURL], dirs[state().PostgresStandbyURL]}, []string{p, sb})
}
