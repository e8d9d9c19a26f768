//go:build e2e && chaos

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/testenv"
)

// postgresFailover is one of the table's last two rows (round 1 and 2): the Postgres primary
// is killed with SIGKILL and the stack runner finishes the failover with its commands, as
// deploy/README.md says: `bin/stack pg-promote` stops and fences the old primary (the runner
// had restarted it), promotes the standby and rewrites stack.json to name it, then
// `bin/stack pg-rebuild` makes the old primary a streaming standby of the new one. The product
// is not told: its URL names both servers with target_session_attrs=read-write
// (stackstate.FailoverURL), so its new connections find the promoted one. Round 2 kills the
// server round 1 promoted, and ends with the roles where they started: a primary, a streaming
// standby and a stack.json that names them, after a double failover.
//
// The stack's standby streams asynchronously, and a primary killed then takes with it what the
// standby had not yet received: a run saw 6 of 555 accepted views lost that way. Losing nothing
// acknowledged takes synchronous replication (deploy/README.md), which each row turns on first.
func postgresFailover(round int) clusterNode {
	name := "postgres-primary (synchronous standby), promoted and rebuilt by the runner"
	if round > 1 {
		name = fmt.Sprintf("postgres-primary again (failover %d: the server promoted before), promoted and rebuilt", round)
	}
	return clusterNode{name: name, kill: func(rep *chaosReport) (func() error, error) {
		primaryURL, standbyURL := env.State.PostgresURL, env.State.PostgresStandbyURL
		if standbyURL == "" {
			return nil, errors.New("stack.json names no standby to promote")
		}
		if err := synchronousStandby(primaryURL); err != nil {
			return nil, err
		}
		pid, err := env.EnginePID(testenv.EnginePostgres)
		if err != nil {
			return nil, err
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return nil, err
		}
		t0 := time.Now()
		// Detection: the primary no longer takes writes (refused; the runner restarts it).
		for writable(primaryURL) {
			if time.Since(t0) > 30*time.Second {
				return nil, fmt.Errorf("the primary (pid %d) still takes writes 30 s after its kill", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		detected := time.Since(t0)
		promoteOut, err := env.RunnerCommand("pg-promote")
		if err != nil {
			return nil, fmt.Errorf("%w\n%s", err, promoteOut)
		}
		promoted := time.Since(t0)
		if env.State.PostgresURL != standbyURL {
			return nil, fmt.Errorf("after pg-promote stack.json's postgresUrl is %s, not the promoted %s", env.State.PostgresURL, standbyURL)
		}
		return func() error {
			t1 := time.Now()
			out, err := env.RunnerCommand("pg-rebuild")
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out)
			}
			rebuilt := time.Since(t1)
			st := env.State
			errs := []error{roleIs(st, "postgres-primary", standbyURL), roleIs(st, "postgres-standby", primaryURL)}
			if st.PostgresURL != standbyURL || st.PostgresStandbyURL != primaryURL {
				errs = append(errs, fmt.Errorf("stack.json names primary %s and standby %s; want %s and %s", st.PostgresURL, st.PostgresStandbyURL, standbyURL, primaryURL))
			}
			if !writable(st.PostgresURL) {
				errs = append(errs, errors.New("the promoted server does not take writes"))
			}
			errs = append(errs, streams(st.PostgresStandbyURL))
			rep.info("primary's loss detected (ms)", float64(detected.Milliseconds()))
			rep.info("standby promoted, bin/stack pg-promote returned (ms)", float64(promoted.Milliseconds()))
			rep.info("old primary rebuilt as its standby, bin/stack pg-rebuild (ms)", float64(rebuilt.Milliseconds()))
			rep.note("pg-promote: %s", strings.Join(strings.Fields(promoteOut), " "))
			rep.note("pg-rebuild: %s", strings.Join(strings.Fields(out), " "))
			return errors.Join(errs...)
		}, nil
	}}
}

// roleIs checks that stack.json lists the process named role at url.
func roleIs(st testenv.State, role, url string) error {
	for _, p := range st.Processes {
		if p.Name == role {
			if p.URL != url {
				return fmt.Errorf("stack.json lists %s at %s, not %s", role, p.URL, url)
			}
			return nil
		}
	}
	return fmt.Errorf("stack.json lists no %s", role)
}

// writable reports whether the server of url accepts a connection and is not in recovery.
func writable(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	var recovery bool
	return conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery) == nil && !recovery
}

// streams checks that the server of url is a hot standby whose WAL receiver streams.
func streams(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("the standby %s: %w", url, err)
	}
	defer conn.Close(context.Background())
	var recovery bool
	var status string
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery(), coalesce((SELECT status FROM pg_stat_wal_receiver), 'none')").Scan(&recovery, &status); err != nil {
		return fmt.Errorf("the standby %s: %w", url, err)
	}
	if !recovery || status != "streaming" {
		return fmt.Errorf("the standby %s: in recovery %v, WAL receiver %s", url, recovery, status)
	}
	return nil
}

// synchronousStandby makes the primary's commits wait for the standby's flush
// (synchronous_standby_names, reloaded) and returns once the standby reports itself synchronous.
// Only the primary's postgresql.auto.conf gets the setting: the promoted standby must not wait
// for a standby it no longer has.
func synchronousStandby(primaryURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, primaryURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '"postgres-standby"'`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	for {
		var state string
		err := conn.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'postgres-standby'`).Scan(&state)
		if err == nil && state == "sync" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the standby did not become synchronous: %v (state %q)", err, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
