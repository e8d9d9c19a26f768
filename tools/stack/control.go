package stack

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A running runner takes commands on a Unix socket beside its data (`bin/stack --dir DIR
// COMMAND` is the client): the failover commands act on processes only the runner may touch,
// since its supervisors restart whatever stops. One command per connection: the client sends
// its name on a line, the runner answers with progress lines and a last line, "ok" or
// "error: ...".

// controlCommands are the commands a runner takes, with what they do (the client's usage).
var controlCommands = map[string]string{
	"pg-promote": "cluster shape: stop and fence the Postgres primary, promote the standby, rewrite the state file",
	"pg-rebuild": "cluster shape: rebuild the Postgres server that is not the primary as its streaming standby (pg_rewind, else pg_basebackup)",
}

// IsControlCommand reports whether name is a command a running runner takes.
func IsControlCommand(name string) bool {
	_, ok := controlCommands[name]
	return ok
}

// ControlUsage lists the runner's commands, one a line.
func ControlUsage() string {
	var b strings.Builder
	for _, name := range []string{"pg-promote", "pg-rebuild"} {
		fmt.Fprintf(&b, "  %-11s %s\n", name, controlCommands[name])
	}
	return b.String()
}

// controlSocket is the runner's socket for the data directory dir: DIR/stack.sock, or, when
// that path is longer than a socket address holds (108 bytes), one in the temporary directory
// named after dir.
func controlSocket(dir string) string {
	path := filepath.Join(dir, "stack.sock")
	if len(path) < 100 {
		return path
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "splathost-stack-"+hex.EncodeToString(sum[:8])+".sock")
}

// serveControl listens on the control socket until Stop; the socket is the runner's user's only
// (0600), like the state file. A socket left by a killed runner is replaced: the data
// directory's lock says no runner is using it.
func (s *Stack) serveControl() error {
	path := controlSocket(s.opts.Dir)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("control socket: %w", err)
	}
	s.control = ln
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed by Stop
			}
			go s.handleControl(conn)
		}
	}()
	return nil
}

// closeControl stops taking commands and removes the socket.
func (s *Stack) closeControl() {
	if s.control != nil {
		s.control.Close()
		_ = os.Remove(controlSocket(s.opts.Dir))
	}
}

// handleControl runs the one command of a connection. Commands run one at a time.
func (s *Stack) handleControl(conn net.Conn) {
	defer conn.Close()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return
	}
	name := strings.TrimSpace(line)
	run := map[string]func(context.Context, io.Writer) error{
		"pg-promote": s.pgPromote,
		"pg-rebuild": s.pgRebuild,
	}[name]
	if run == nil {
		fmt.Fprintf(conn, "error: unknown command %q\n", name)
		return
	}
	s.roleMu.Lock()
	defer s.roleMu.Unlock()
	if s.shuttingDown() {
		fmt.Fprintln(conn, "error: the stack is stopping")
		return
	}
	ctx, cancel := s.untilStopping()
	defer cancel()
	s.log.Info("control command", "command", name)
	if err := run(ctx, conn); err != nil {
		s.log.Error("control command failed", "command", name, "error", err)
		fmt.Fprintf(conn, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " | "))
		return
	}
	fmt.Fprintln(conn, "ok")
}

// Control runs a command on the runner serving the data directory dir, copying its progress
// to out; the error is the command's.
func Control(dir, command string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	conn, err := net.Dial("unix", controlSocket(dir))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no stack runner serves %s (start it first: bin/stack --dir %s --cluster)", dir, dir)
	} else if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := fmt.Fprintln(conn, command); err != nil {
		return err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ok":
			return nil
		case strings.HasPrefix(line, "error: "):
			return fmt.Errorf("%s: %s", command, strings.TrimPrefix(line, "error: "))
		}
		fmt.Fprintln(out, line)
	}
	return fmt.Errorf("%s: the runner closed the connection before the command finished (%v)", command, sc.Err())
}
