package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// primaryConninfo is how the standby reaches the primary: the trust rule initdb writes for
// replication from 127.0.0.1, no password.
func (p *postgres) primaryConninfo() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("host=%s port=%d user=postgres application_name=%s", loopback, p.primaryPort, p.name)
}

// basebackup makes the standby's data a copy of the running primary with pg_basebackup -R,
// which also writes standby.signal and primary_conninfo. Like initdb it only runs into a fresh
// directory, so a half-copied one from an interrupted attempt is wiped first.
func (p *postgres) basebackup(ctx context.Context, cred *syscall.Credential) error {
	name, primaryPort := p.roleName(), p.primaryOf()
	p.logger().Info("copying the primary", "dir", p.dataDir, "primaryPort", primaryPort)
	if err := p.wipe(); err != nil {
		return err
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer logFile.Close()
	// -X stream copies the WAL written during the backup over a second connection, so the
	// copy is consistent without archiving; -c fast does not wait for the next checkpoint.
	cmd := exec.CommandContext(ctx, filepath.Join(postgresBinDir, "pg_basebackup"),
		"-D", p.dataDir, "-R", "-X", "stream", "-c", "fast",
		"-h", loopback, "-p", strconv.Itoa(primaryPort), "-U", "postgres")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
	cmd.Dir = p.dataDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: pg_basebackup failed (%v); see %s:\n%s", name, err, p.logPath, logTail(p.logPath, 20))
	}
	return nil
}

// wipe empties the data directory, keeping the directory itself (its owner and mode).
func (p *postgres) wipe() error {
	entries, err := os.ReadDir(p.dataDir)
	if err != nil {
		return fmt.Errorf("%s: %w", p.roleName(), err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(p.dataDir, e.Name())); err != nil {
			return fmt.Errorf("%s: clean %s: %w", p.roleName(), p.dataDir, err)
		}
	}
	return nil
}

// checkStreaming succeeds once the server is a hot standby that accepts reads and receives the
// primary's WAL: a standby that answers but lost its primary would serve ever staler reads.
func checkStreaming(ctx context.Context, conn *pgx.Conn) error {
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil {
		return err
	}
	if !recovery {
		return errors.New("not in recovery: this server is a primary, not a standby")
	}
	var status string
	err := conn.QueryRow(ctx, "SELECT status FROM pg_stat_wal_receiver").Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("no WAL receiver yet")
	} else if err != nil {
		return err
	}
	if status != "streaming" {
		return fmt.Errorf("WAL receiver is %s, not streaming", status)
	}
	return nil
}
