//go:build e2e && chaos

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/splathost/splathost/internal/testenv"
)

// pgBin holds pg_ctl (Debian's PostgreSQL 15, as the stack runs).
const pgBin = "/usr/lib/postgresql/15/bin"

// postgresFailover is the table's last row: the Postgres primary is killed with SIGKILL and the
// standby promoted by hand (pg_ctl promote), as the runbook in deploy/README.md says. The product
// is not told: its URL names both servers with target_session_attrs=read-write
// (stackstate.FailoverURL), so its new connections find the promoted one. The runner restarts
// whatever dies, which would bring the old primary back as a second writable server; the row
// fences it first, as an operator must, with a standby.signal in its data directory, so it comes
// back read-only (and unreplicated: rebuilding it as the new standby is the runbook's last step).
// The stack is left failed over: this row runs last.
//
// The stack's standby streams asynchronously, and a primary killed then takes with it what the
// standby had not yet received: a run saw 6 of 555 accepted views lost that way. Losing nothing
// acknowledged takes synchronous replication (deploy/README.md), which the row turns on first.
func postgresFailover() clusterNode {
	return clusterNode{name: "postgres-primary (synchronous standby), standby promoted by hand", kill: func(rep *chaosReport) (func() error, error) {
		primaryURL, standbyURL := env.State.PostgresURL, env.State.PostgresStandbyURL
		if err := synchronousStandby(primaryURL); err != nil {
			return nil, err
		}
		primaryDir, standbyDir := filepath.Join(env.Dir, "postgres"), filepath.Join(env.Dir, "postgres-standby")
		if err := fence(primaryDir); err != nil {
			return nil, err
		}
		pid, err := env.EnginePID(testenv.EnginePostgres)
		if err != nil {
			return nil, err
		}
		restarted := make(chan error, 1)
		go func() { _, err := env.KillEngine(testenv.EnginePostgres); restarted <- err }()
		t0 := time.Now()
		// Detection: the primary no longer takes writes (refused, or back read-only).
		for writable(primaryURL) {
			if time.Since(t0) > 30*time.Second {
				return nil, fmt.Errorf("the primary (pid %d) still takes writes 30 s after its kill", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		detected := time.Since(t0)
		promote := osexec.Command(filepath.Join(pgBin, "pg_ctl"), "promote", "-w", "-t", "60", "-D", standbyDir)
		if err := asPostgres(promote); err != nil {
			return nil, err
		}
		out, err := promote.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("pg_ctl promote: %v: %s", err, out)
		}
		promoted := time.Since(t0)
		return func() error {
			err := <-restarted
			if !writable(standbyURL) {
				err = errors.Join(err, errors.New("the promoted standby does not take writes"))
			}
			rep.info("primary's loss detected (ms)", float64(detected.Milliseconds()))
			rep.info("standby promoted, pg_ctl promote -w returned (ms)", float64(promoted.Milliseconds()))
			return err
		}, nil
	}}
}

// fence makes the Postgres data directory start as a standby the next time it starts: a dead
// primary that comes back must not take writes beside the promoted one.
func fence(dataDir string) error {
	path := filepath.Join(dataDir, "standby.signal")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return err
	}
	info, err := os.Stat(dataDir)
	if err != nil {
		return err
	}
	st := info.Sys().(*syscall.Stat_t)
	return os.Chown(path, int(st.Uid), int(st.Gid))
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

// asPostgres runs cmd as the postgres user when the test runs as root (pg_ctl refuses root).
func asPostgres(cmd *osexec.Cmd) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
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
