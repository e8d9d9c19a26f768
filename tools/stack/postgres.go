package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresBinDir is where Debian's postgresql-15 package puts the server binaries.
const postgresBinDir = "/usr/lib/postgresql/15/bin"

// productDatabase is the database the services use.
const productDatabase = "splathost"

// postgres runs a Postgres 15 cluster owned by the postgres user under DIR/postgres, or (the
// cluster shape) a streaming hot standby of it under DIR/postgres-standby.
type postgres struct {
	// mu guards the role: name, primaryPort and log, which a failover changes while the
	// server's supervisor may be starting it (pgroles.go).
	mu sync.Mutex
	// name is the process's name in the state file and the runner's log ("postgres", or
	// "postgres-primary" and "postgres-standby" in the cluster shape, following the role).
	name    string
	dataDir string
	logPath string
	port    int
	// primaryPort, when not zero, makes this server a hot standby streaming from the primary
	// on that port: its data starts as a pg_basebackup -R of the primary.
	primaryPort int
	log         *slog.Logger
	proc        *process
	// tcpOnly leaves out the Unix socket: the cluster shape's servers, whose data directories
	// pg_rewind copies from one to the other, a socket in them included (which it cannot read).
	tcpOnly bool
	// held is set while a control command keeps the server down (pgroles.go); guarded by
	// Stack.roleMu.
	held bool
}

func newPostgres(dir string, port int, log *slog.Logger) *postgres {
	return &postgres{
		name:    "postgres",
		dataDir: filepath.Join(dir, "postgres"),
		logPath: filepath.Join(dir, "logs", "postgres.log"),
		port:    port,
		log:     log.With("part", "postgres"),
	}
}

// newStandby is a hot standby of the primary listening on primaryPort (the cluster shape).
func newStandby(dir string, port, primaryPort int, log *slog.Logger) *postgres {
	return &postgres{
		name:        "postgres-standby",
		dataDir:     filepath.Join(dir, "postgres-standby"),
		logPath:     filepath.Join(dir, "logs", "postgres-standby.log"),
		port:        port,
		primaryPort: primaryPort,
		log:         log.With("part", "postgres-standby"),
	}
}

// standby reports whether this server is a streaming replica.
func (p *postgres) standby() bool { return p.primaryOf() != 0 }

// primaryOf is the port of the primary this server streams from; 0 for a primary.
func (p *postgres) primaryOf() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.primaryPort
}

// roleName is the server's name now (it follows the role in the cluster shape).
func (p *postgres) roleName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// logger is the server's logger now, tagged with its role's name.
func (p *postgres) logger() *slog.Logger {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log
}

// setRole makes the server the primary (primaryPort 0) or a standby of the primary on
// primaryPort, named name; it takes effect at its next start.
func (p *postgres) setRole(name string, primaryPort int, log *slog.Logger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.primaryPort, p.log = name, primaryPort, log.With("part", name)
}

// url is the connection string of the product database.
func (p *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", hostPort(p.port), productDatabase)
}

// check reports a missing installation before anything starts.
func (p *postgres) check() error {
	for _, bin := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(postgresBinDir, bin)); err != nil {
			return fmt.Errorf("postgres: %s not found in %s: run `make deps` (apt-get install -y postgresql-15)", bin, postgresBinDir)
		}
	}
	_, err := postgresCredential()
	return err
}

// start initialises the cluster on first run, starts the postmaster, waits for it to accept
// connections and creates the product database.
func (p *postgres) start(ctx context.Context, timeout time.Duration) error {
	if err := p.check(); err != nil {
		return err
	}
	cred, err := postgresCredential()
	if err != nil {
		return err
	}
	if err := p.prepareDir(cred); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(p.dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		init := p.initdb
		if p.standby() {
			init = p.basebackup
		}
		if err := init(ctx, cred); err != nil {
			return err
		}
	}
	if err := p.clearStalePid(); err != nil {
		return err
	}
	// The Unix socket sits beside the data for psql convenience; the kernel caps socket paths at
	// 107 bytes, so a deep directory gets TCP only (which is all the stack itself uses).
	socketDir := p.dataDir
	if len(socketDir)+len("/.s.PGSQL.65535.lock") > 107 || p.tcpOnly {
		socketDir = ""
	}
	args := []string{
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.port),
		"-k", socketDir,
		"-c", "listen_addresses=" + loopback,
		// Every service and test pool holds a few connections; 100 runs out under the
		// integration suite. A hot standby needs at least the primary's.
		"-c", "max_connections=200",
	}
	// Also in postgresql.conf (initdb), but data directories made before it was written there
	// get them here.
	for _, kv := range rewindSettings {
		args = append(args, "-c", kv[0]+"="+kv[1])
	}
	standby := p.standby()
	if standby {
		// On the command line, not only in postgresql.auto.conf (pg_basebackup -R), so a
		// primary on another port after --random-ports is still found on a warm restart.
		args = append(args, "-c", "primary_conninfo="+p.primaryConninfo())
	}
	name := p.roleName()
	p.proc, err = startProcess(procSpec{
		name:        name,
		path:        filepath.Join(postgresBinDir, "postgres"),
		args:        args,
		env:         []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"},
		dir:         p.dataDir,
		logPath:     p.logPath,
		cred:        cred,
		stopSignal:  syscall.SIGINT, // "fast" shutdown, what pg_ctl stop -m fast sends
		deathSignal: syscall.SIGINT,
	})
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	adminURL := p.adminURL()
	err = waitHealthy(ctx, name, p.proc, p.logPath, timeout, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		if standby {
			return checkStreaming(ctx, conn)
		}
		return ensureDatabase(ctx, conn, productDatabase)
	})
	if err != nil {
		return err
	}
	return nil
}

// adminURL is the connection string of the server's postgres database, for the runner's own
// checks and commands.
func (p *postgres) adminURL() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=2", hostPort(p.port))
}

// ensureDatabase creates the database when missing. CREATE DATABASE has no IF NOT EXISTS, so
// look first and treat a concurrent creation as success.
func ensureDatabase(ctx context.Context, conn *pgx.Conn, name string) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// postgresCredential returns the uid and gid of the postgres user: initdb and the server refuse
// to run as root.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres: no postgres user (%v): run `make deps` (apt-get install -y postgresql-15)", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres: user ids: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// prepareDir creates the data directory owned by postgres and makes sure postgres can reach it:
// test harnesses make 0700 temp dirs owned by root, which postgres cannot traverse.
func (p *postgres) prepareDir(cred *syscall.Credential) error {
	if err := os.MkdirAll(p.dataDir, 0o700); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := os.Chown(p.dataDir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("postgres: chown %s: %w", p.dataDir, err)
	}
	if err := os.Chmod(p.dataDir, 0o700); err != nil {
		return fmt.Errorf("postgres: chmod %s: %w", p.dataDir, err)
	}
	for dir := filepath.Dir(p.dataDir); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			// Only the search bit: postgres may pass through, not list or write.
			if err := os.Chmod(dir, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("postgres: cannot let the postgres user traverse %s: %w", dir, err)
			}
			p.logger().Info("made directory traversable for the postgres user", "dir", dir)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// initdb creates the cluster. It runs into a fresh directory only, so a failed attempt is wiped
// to let the next run start over instead of failing on a half-initialised cluster.
func (p *postgres) initdb(ctx context.Context, cred *syscall.Credential) error {
	p.logger().Info("initialising cluster", "dir", p.dataDir)
	if err := p.wipe(); err != nil {
		return err
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(postgresBinDir, "initdb"),
		"-D", p.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
	cmd.Dir = p.dataDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("postgres: initdb failed (%v); see %s:\n%s", err, p.logPath, logTail(p.logPath, 20))
	}
	// In the configuration file, not only on the command line: pg_rewind first recovers a
	// crashed server in single-user mode, which reads the file alone (and records the
	// wal_log_hints pg_rewind checks). Copies of this cluster (pg_basebackup, pg_rewind) take
	// the file along.
	conf, err := os.OpenFile(filepath.Join(p.dataDir, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conf.Close()
	var b strings.Builder
	b.WriteString("\n# pg_rewind needs these (the stack runner's pg-rebuild)\n")
	for _, kv := range rewindSettings {
		fmt.Fprintf(&b, "%s = '%s'\n", kv[0], kv[1])
	}
	if _, err := conf.WriteString(b.String()); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// rewindSettings let pg_rewind turn a failed-over primary into a standby of its successor
// without copying everything (pgroles.go): hint-bit changes WAL-logged, and the WAL back to the
// last checkpoint before the histories split kept in pg_wal, which the old primary's own
// checkpoints since (crash recovery, shutdown) would otherwise have recycled.
var rewindSettings = [][2]string{{"wal_log_hints", "on"}, {"wal_keep_size", "256MB"}}

// clearStalePid deals with postmaster.pid left by a crashed run. Postgres itself ignores a lock
// file whose pid is dead, but refuses to start when the pid was reused by an unrelated process
// (common in containers), and a postmaster orphaned by a killed runner must be shut down first.
func (p *postgres) clearStalePid() error {
	pidFile := filepath.Join(p.dataDir, "postmaster.pid")
	f, err := os.Open(pidFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	sc := bufio.NewScanner(f)
	var pid int
	if sc.Scan() {
		pid, _ = strconv.Atoi(strings.TrimSpace(sc.Text()))
	}
	f.Close()
	if pidAlive(pid) && isPostgresFor(pid, p.dataDir) {
		p.logger().Warn("stopping a postmaster left over from an earlier run", "pid", pid)
		if err := stopOrphan(pid, syscall.SIGINT, 30*time.Second); err != nil {
			return fmt.Errorf("postgres: stop leftover postmaster %d: %w", pid, err)
		}
		return nil // a clean shutdown removes the file itself
	}
	p.logger().Info("removing stale postmaster.pid", "pid", pid)
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// isPostgresFor reports whether pid is a postmaster serving dataDir.
func isPostgresFor(pid int, dataDir string) bool {
	cmdline := pidCmdline(pid)
	if !strings.Contains(cmdline, "postgres") {
		return false
	}
	if strings.Contains(cmdline, dataDir) {
		return true
	}
	// pg_ctl may have started it with a relative -D or PGDATA; compare working directories.
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && cwd == dataDir
}

// stop shuts the server down with a fast shutdown: clients are disconnected, data is flushed.
func (p *postgres) stop(timeout time.Duration) error {
	return p.proc.stop(timeout)
}
