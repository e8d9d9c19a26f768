package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cluster shape's two Postgres servers and their roles. Each server keeps its data
// directory (DIR/postgres, DIR/postgres-standby), its log and its port for the runner's life;
// its name in the state file and the runner's log follows its role. A failover moves the roles:
//
//   - `bin/stack --dir DIR pg-promote` stops the primary (cleanly if it runs; a dead one is kept
//     down), fences its data directory with standby.signal so nothing brings it back writable,
//     promotes the standby, and rewrites the state file: postgresUrl and the postgres-primary
//     process name the promoted server, postgresStandbyUrl is left out while there is no
//     standby;
//   - `bin/stack --dir DIR pg-rebuild` makes the server that is not the primary a streaming
//     standby of it again: kept down, rewound with pg_rewind (or, when that fails, emptied and
//     copied with pg_basebackup), started under supervision, then listed as postgresStandbyUrl.
//     A standby promoted by hand (the runbook's pg_ctl promote) is adopted as the primary first.
//
// At start-up the roles are read from the data directories: the one without standby.signal is
// the primary's, and gets the primary's fixed port (placePostgres).
const (
	pgPrimaryName = "postgres-primary"
	pgStandbyName = "postgres-standby"
)

// pgRoleWait bounds each wait of a failover command on a server's supervisor: a clean stop, or
// a start that may copy the whole primary first.
const pgRoleWait = 10 * time.Minute

// placePostgres gives the primary's role (s.pg, the fixed port) to whichever data directory
// holds the primary after the last run's failovers, and the standby's to the other.
func (s *Stack) placePostgres(standby *postgres) error {
	primaryDir, standbyDir, err := pgDataDirsByRole(s.pg.dataDir, standby.dataDir)
	if err != nil {
		return err
	}
	if primaryDir != s.pg.dataDir {
		s.log.Info("the standby's data directory holds the primary since a failover", "primary", primaryDir, "standby", standbyDir)
		s.pg.dataDir, standby.dataDir = standby.dataDir, s.pg.dataDir
		s.pg.logPath, standby.logPath = standby.logPath, s.pg.logPath
	}
	s.pg.setRole(pgPrimaryName, 0, s.log)
	standby.setRole(pgStandbyName, s.pg.port, s.log)
	s.pg.tcpOnly, standby.tcpOnly = true, true
	return nil
}

// pgDataDirsByRole orders the two data directories primary first: the one without
// standby.signal holds the primary. first is the primary's by default (a fresh stack, or one
// that never failed over).
func pgDataDirsByRole(first, second string) (primary, standby string, err error) {
	firstPrimary := hasPGData(first) && !fileExists(filepath.Join(first, "standby.signal"))
	secondPrimary := hasPGData(second) && !fileExists(filepath.Join(second, "standby.signal"))
	switch {
	case firstPrimary && secondPrimary:
		return "", "", fmt.Errorf("postgres: both %s and %s hold a primary (a standby was promoted while the old primary ran unfenced): create standby.signal in the one whose writes are to be dropped, then start and run `bin/stack pg-rebuild`", first, second)
	case secondPrimary:
		return second, first, nil
	case hasPGData(first) && hasPGData(second) && !firstPrimary:
		return "", "", fmt.Errorf("postgres: neither %s nor %s holds a primary (both have standby.signal): remove it from the one to promote", first, second)
	}
	return first, second, nil
}

// hasPGData reports whether dir holds a Postgres cluster.
func hasPGData(dir string) bool { return fileExists(filepath.Join(dir, "PG_VERSION")) }

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pgEngines are the two Postgres servers' engines, primary first, each bound to its server
// (not to a role: the supervisor restarts the same data directory whatever its role) and named
// by its role.
func (s *Stack) pgEngines(mk func(name, url string, proc func() *process, start func(context.Context, time.Duration) error) *engine) []*engine {
	var out []*engine
	for _, p := range []*postgres{s.pg, s.cluster.standby} {
		e := mk(p.roleName(), p.url(), func() *process { return p.proc }, p.start)
		e.role = p.roleName
		out = append(out, e)
	}
	return out
}

// pgEngine is the supervised engine of a Postgres server.
func (s *Stack) pgEngine(p *postgres) (*engine, error) {
	for _, e := range s.engineList {
		if e.url == p.url() {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%s is not supervised", p.roleName())
}

// pgPromote is the pg-promote command (see the comment above pgPrimaryName).
func (s *Stack) pgPromote(ctx context.Context, out io.Writer) error {
	old, next, err := s.pgServers()
	if err != nil {
		return err
	}
	say := s.sayer(out)
	writable, err := serverWritable(ctx, next)
	if err != nil {
		return fmt.Errorf("the standby (%s) does not answer, so it cannot be promoted: %w", next.url(), err)
	}
	if writable {
		say("the standby %s already takes writes (promoted by hand): adopting it as the primary", next.url())
	}
	say("stopping the primary %s (%s) and keeping it down", old.url(), old.dataDir)
	t0 := time.Now()
	if err := s.holdServer(ctx, old); err != nil {
		return err
	}
	if err := fence(old.dataDir); err != nil {
		return err
	}
	say("stopped in %s and fenced: %s/standby.signal, so it can only start read-only", time.Since(t0).Round(time.Millisecond), old.dataDir)
	if !writable {
		t0 := time.Now()
		if err := promote(ctx, next); err != nil {
			return err
		}
		say("promoted %s in %s", next.url(), time.Since(t0).Round(time.Millisecond))
	}
	if err := s.swapRoles(next, old, false); err != nil {
		return err
	}
	say("%s names the new primary (postgresUrl %s); no standby until `bin/stack --dir %s pg-rebuild`", s.opts.StateFile, next.url(), s.opts.Dir)
	return nil
}

// pgRebuild is the pg-rebuild command (see the comment above pgPrimaryName).
func (s *Stack) pgRebuild(ctx context.Context, out io.Writer) error {
	primary, standby, err := s.pgServers()
	if err != nil {
		return err
	}
	say := s.sayer(out)
	// A standby promoted by hand takes the primary's role first; the old primary, which may
	// have come back writable under the runner, is stopped and fenced before anything else.
	if !standby.held {
		if promoted, err := serverWritable(ctx, standby); err == nil && promoted {
			say("the standby %s takes writes (promoted by hand): adopting it as the primary", standby.url())
			if err := s.holdServer(ctx, primary); err != nil {
				return err
			}
			if err := fence(primary.dataDir); err != nil {
				return err
			}
			if err := s.swapRoles(standby, primary, false); err != nil {
				return err
			}
			primary, standby = standby, primary
		}
	}
	if ok, err := serverWritable(ctx, primary); err != nil || !ok {
		return fmt.Errorf("the primary %s does not take writes (%v): promote the standby first (`bin/stack --dir %s pg-promote`)", primary.url(), err, s.opts.Dir)
	}
	t0 := time.Now()
	say("stopping %s (%s) to rebuild it as a standby of %s", standby.url(), standby.dataDir, primary.url())
	if err := s.holdServer(ctx, standby); err != nil {
		return err
	}
	rewound := s.rewind(ctx, standby, primary, say)
	if !rewound {
		say("copying the primary with pg_basebackup instead")
		if err := standby.wipe(); err != nil {
			return err
		}
	}
	err = s.releaseServer(ctx, standby)
	if err != nil && rewound {
		// A rewound server that cannot follow (its history diverged in a way pg_rewind did
		// not see) is copied afresh.
		say("the rewound server did not stream (%v); copying the primary with pg_basebackup instead", err)
		if err = s.holdServer(ctx, standby); err == nil {
			if err = standby.wipe(); err == nil {
				err = s.releaseServer(ctx, standby)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s did not start as a standby: %w", standby.dataDir, err)
	}
	if err := caughtUp(ctx, standby, primary); err != nil {
		return err
	}
	if err := s.updateState(func(st *State) { st.PostgresStandbyURL = standby.url() }); err != nil {
		return err
	}
	say("%s streams from %s (rebuilt in %s); %s names both", standby.url(), primary.url(), time.Since(t0).Round(time.Millisecond), s.opts.StateFile)
	return nil
}

// pgServers is the current primary and standby; an error outside the cluster shape.
func (s *Stack) pgServers() (primary, standby *postgres, err error) {
	if s.cluster == nil {
		return nil, nil, errors.New("the stack has one Postgres server: failover commands need the cluster shape (bin/stack --cluster)")
	}
	return s.pg, s.cluster.standby, nil
}

// sayer reports a command's progress to its caller and in the runner's log.
func (s *Stack) sayer(out io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintln(out, msg)
		s.log.Info(msg, "part", "failover")
	}
}

// holdServer has p's supervisor stop it cleanly (a dead one is kept from restarting) and keep
// it down, and returns once it and every process it started are gone.
func (s *Stack) holdServer(ctx context.Context, p *postgres) error {
	if p.held {
		return nil
	}
	e, err := s.pgEngine(p)
	if err != nil {
		return err
	}
	drain(e.held)
	post(e.hold, false)
	select {
	case <-e.held:
		p.held = true
		return nil
	case <-s.stopping:
		return errors.New("the stack is stopping")
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pgRoleWait):
		return fmt.Errorf("%s was not stopped within %s", p.dataDir, pgRoleWait)
	}
}

// releaseServer lets p's supervisor start it again and returns the outcome of that start (a
// standby's start waits until it streams). The supervisor retries a start that failed.
func (s *Stack) releaseServer(ctx context.Context, p *postgres) error {
	e, err := s.pgEngine(p)
	if err != nil {
		return err
	}
	drain(e.started)
	post(e.release, struct{}{})
	p.held = false
	select {
	case err := <-e.started:
		return err
	case <-s.stopping:
		return errors.New("the stack is stopping")
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pgRoleWait):
		return fmt.Errorf("%s was not started within %s", p.dataDir, pgRoleWait)
	}
}

// drain empties a channel that keeps one value at most.
func drain[T any](ch chan T) {
	select {
	case <-ch:
	default:
	}
}

// swapRoles makes primary the primary and standby its standby, and rewrites the state file to
// say so: postgresUrl, the two servers' process names and, only when standbyServing (the
// standby streams), postgresStandbyUrl.
func (s *Stack) swapRoles(primary, standby *postgres, standbyServing bool) error {
	return s.updateState(func(st *State) {
		primary.setRole(pgPrimaryName, 0, s.log)
		standby.setRole(pgStandbyName, primary.port, s.log)
		s.pg, s.cluster.standby = primary, standby
		st.PostgresURL = primary.url()
		st.PostgresStandbyURL = ""
		if standbyServing {
			st.PostgresStandbyURL = standby.url()
		}
		for i, p := range st.Processes {
			switch p.URL {
			case primary.url():
				st.Processes[i].Name = pgPrimaryName
			case standby.url():
				st.Processes[i].Name = pgStandbyName
			}
		}
	})
}

// fence creates standby.signal in a stopped server's data directory, owned like the directory,
// so whatever starts it next (the supervisor, a later run) starts it read-only.
func fence(dataDir string) error {
	path := filepath.Join(dataDir, "standby.signal")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return fmt.Errorf("fence %s: %w", dataDir, err)
	}
	info, err := os.Stat(dataDir)
	if err != nil {
		return err
	}
	st := info.Sys().(*syscall.Stat_t)
	return os.Chown(path, int(st.Uid), int(st.Gid))
}

// serverWritable reports whether p answers and is not in recovery.
func serverWritable(ctx context.Context, p *postgres) (writable bool, err error) {
	err = withAdmin(ctx, p, 5*time.Second, func(ctx context.Context, conn *pgx.Conn) error {
		var recovery bool
		err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery)
		writable = !recovery
		return err
	})
	return writable, err
}

// promote ends p's recovery and waits until it takes writes (pg_promote, what pg_ctl promote
// does, over a connection: the runner needs no shell as the postgres user).
func promote(ctx context.Context, p *postgres) error {
	var ok bool
	err := withAdmin(ctx, p, 90*time.Second, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok)
	})
	if err != nil {
		return fmt.Errorf("promote %s: %w", p.url(), err)
	}
	if !ok {
		return fmt.Errorf("promote %s: not promoted within 60 s; see %s", p.url(), p.logPath)
	}
	return nil
}

// caughtUp waits until the standby has replayed what the primary had written when it was asked,
// and streams. A rewound standby first streams the old timeline up to where the histories
// split, and its WAL receiver waits between that and the primary's timeline: only past the
// primary's position does it follow the primary for good.
func caughtUp(ctx context.Context, standby, primary *postgres) error {
	var target string
	err := withAdmin(ctx, primary, 10*time.Second, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&target)
	})
	if err != nil {
		return fmt.Errorf("the primary's WAL position: %w", err)
	}
	var replayed bool
	var status string
	for deadline := time.Now().Add(pgRoleWait); ; time.Sleep(100 * time.Millisecond) {
		err = withAdmin(ctx, standby, 10*time.Second, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false),
				coalesce((SELECT status FROM pg_stat_wal_receiver), 'none')`, target).Scan(&replayed, &status)
		})
		if err == nil && replayed && status == "streaming" {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%s has not caught up with the primary's %s (replayed %v, WAL receiver %s, %v); see %s", standby.url(), target, replayed, status, err, standby.logPath)
		}
	}
}

// checkpoint runs CHECKPOINT on p.
func checkpoint(ctx context.Context, p *postgres) error {
	return withAdmin(ctx, p, time.Minute, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CHECKPOINT")
		return err
	})
}

// withAdmin runs do on a connection to p's postgres database, all within timeout.
func withAdmin(ctx context.Context, p *postgres, timeout time.Duration, do func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.adminURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return do(ctx, conn)
}

// rewind turns the stopped server's data into a standby of primary with pg_rewind, which copies
// only what changed since their histories split: standby.signal and primary_conninfo are
// written by -R. It reports whether that worked; the caller copies the whole primary when not.
func (s *Stack) rewind(ctx context.Context, p, primary *postgres, say func(string, ...any)) bool {
	if !hasPGData(p.dataDir) {
		return false
	}
	// pg_rewind reads the source's timeline from its control file, which the promotion's
	// end-of-recovery checkpoint updates; a checkpoint now makes sure it has.
	if err := checkpoint(ctx, primary); err != nil {
		say("pg_rewind skipped: checkpoint on the primary: %v", err)
		return false
	}
	// A server that crashed is first recovered by pg_rewind in single-user mode, which refuses
	// standby mode; -R writes the file again.
	if err := os.Remove(filepath.Join(p.dataDir, "standby.signal")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		say("pg_rewind skipped: %v", err)
		return false
	}
	cred, err := postgresCredential()
	if err != nil {
		say("pg_rewind skipped: %v", err)
		return false
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		say("pg_rewind skipped: %v", err)
		return false
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n==== %s: pg_rewind from %s\n", time.Now().Format(time.RFC3339), primary.url())
	var mark int64
	if st, err := logFile.Stat(); err == nil {
		mark = st.Size()
	}
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(postgresBinDir, "pg_rewind"),
		"-D", p.dataDir, "-R",
		"--source-server", fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", loopback, primary.port))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
	cmd.Dir = p.dataDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		say("pg_rewind failed (%v); see %s:\n%s", err, p.logPath, logTailFrom(p.logPath, mark, 5))
		return false
	}
	say("rewound %s with pg_rewind in %s", p.dataDir, time.Since(t0).Round(time.Millisecond))
	return true
}
