package stack

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// engine is a server of the infrastructure (Postgres, ClickHouse, versitygw, each Temporal node) that the runner
// keeps running like a product binary: a crash is restarted on the same data directory and
// ports with the supervisor's backoff (restartBase, restartMax, restartReset), so failure tests
// can kill -9 an engine and watch the product recover by itself.
//
// Only the engine's supervisor goroutine touches the engine's process once the stack is up
// (Stop waits for it to return before stopping the engines), so no lock guards it.
type engine struct {
	name string
	// url is what the state file lists for the engine (its client or HTTP address).
	url string
	// proc is the current process.
	proc func() *process
	// start starts the engine again on its data and ports and waits until it answers; it sets
	// what proc returns as soon as the process exists.
	start func(ctx context.Context, timeout time.Duration) error
	// hold asks the supervisor to kill the engine as a crash would and keep it down until
	// release (the runner's SIGUSR1 and SIGUSR2 for ClickHouse); release while it runs is a
	// no-op. One pending request each.
	hold, release chan struct{}
	// restart asks the supervisor to kill the engine as a crash would and start it again at
	// once (the DDL healer's request for a ClickHouse node whose DDL queue stalled, ddlheal.go).
	restart chan struct{}
}

// engines lists the supervised engines in start order.
func (s *Stack) engines() []*engine {
	mk := func(name, url string, proc func() *process, start func(context.Context, time.Duration) error) *engine {
		return &engine{name: name, url: url, proc: proc, start: start, hold: make(chan struct{}, 1), release: make(chan struct{}, 1),
			restart: make(chan struct{}, 1)}
	}
	if s.cluster != nil {
		return s.clusterEngines(mk)
	}
	return append([]*engine{
		mk("postgres", s.pg.url(), func() *process { return s.pg.proc }, s.pg.start),
		mk("clickhouse", s.ch.httpURL(), func() *process { return s.ch.proc }, s.ch.start),
		mk("versitygw", s.s3.url(), func() *process { return s.s3.proc }, s.s3.start),
	}, s.temporal.engines(mk)...)
}

// superviseEngine keeps e running until Stop begins: a crash is logged with its exit status,
// whatever is left of the engine's process group is killed (a postmaster killed with SIGKILL
// leaves its backends holding the shared memory, and a new postmaster refuses to start beside
// them), and the engine is started again after the backoff, until it answers; the state file
// then lists its new pid. A restart that fails is retried with a growing backoff.
func (s *Stack) superviseEngine(e *engine) {
	s.engineWG.Go(func() {
		ctx, cancel := s.untilStopping()
		defer cancel()
		backoff := restartBase
		restarts := 0
		for {
			p := e.proc()
			held, restart := false, false
			select {
			case <-s.stopping:
				return
			case <-e.release:
				continue // already running
			case <-e.hold:
				p.stopping.Store(true)
				p.Kill()
				s.log.Warn("engine killed on request; down until asked to start", "part", e.name, "pid", p.Pid())
				held = true
			case <-e.restart:
				p.stopping.Store(true)
				p.Kill() // SIGKILL ends a stopped (SIGSTOP) process too
				s.log.Warn("engine killed on request; starting it again", "part", e.name, "pid", p.Pid())
				restart = true
			case <-p.Done():
			}
			if s.shuttingDown() {
				return
			}
			wait := backoff
			if held {
				select {
				case <-s.stopping:
					return
				case <-e.release:
				}
				wait = 0
			} else if restart {
				wait = 0
			} else {
				if time.Since(p.started) >= restartReset {
					backoff, wait = restartBase, restartBase
				}
				restarts++
				s.log.Warn("engine exited; restarting on the same data and ports", "part", e.name, "pid", p.Pid(),
					"status", exitStatus(p), "ranFor", time.Since(p.started).Round(time.Millisecond).String(),
					"restartIn", wait.String(), "restarts", restarts, "log", p.spec.logPath)
			}
			clearGroup(p.Pid(), 10*time.Second)
			for {
				if !s.pause(wait) {
					return
				}
				backoff = min(2*backoff, restartMax)
				t0 := time.Now()
				err := e.start(ctx, s.opts.StartTimeout)
				if ctx.Err() != nil {
					return // Stop stops whatever start left running
				}
				if err == nil {
					s.log.Info("engine ready again", "part", e.name, "pid", e.proc().Pid(), "took", time.Since(t0).Round(time.Millisecond).String())
					if err := s.recordPID(e.name, e.proc().Pid()); err != nil {
						s.log.Error("state file not updated", "part", e.name, "error", err)
					}
					break
				}
				wait = backoff
				s.log.Error("engine restart failed; retrying", "part", e.name, "error", err, "restartIn", wait.String())
				if np := e.proc(); np != nil && np != p {
					np.stopping.Store(true)
					_ = np.stop(s.opts.StopTimeout)
					clearGroup(np.Pid(), 10*time.Second)
				}
			}
		}
	})
}

// clearGroup kills what is left of a dead engine's process group (pgid: the engine's pid, as
// each engine starts in a group of its own) and waits up to timeout for it to be gone.
func clearGroup(pgid int, timeout time.Duration) {
	if len(groupMembers(pgid)) == 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(groupMembers(pgid)) == 0 {
			return
		}
	}
}

// groupMembers lists the live processes of a process group. Zombies do not count: where init
// does not reap, an orphaned backend lingers as a zombie that holds nothing.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		// After the command name: [0] state, [1] ppid, [2] pgrp.
		if err != nil || len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// procStat returns the fields of /proc/PID/stat after the command name (which is in parentheses
// and may hold spaces).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, os.ErrInvalid
	}
	return strings.Fields(string(b[i+1:])), nil
}
