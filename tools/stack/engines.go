package stack

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// hold asks the supervisor to take the engine down and keep it down until release: true
	// kills it as a crash would (the runner's SIGUSR1 and SIGUSR2 for ClickHouse), false stops
	// it cleanly (a Postgres server about to be fenced or rebuilt, pgroles.go). Release while it
	// runs is a no-op. One pending request each.
	hold    chan bool
	release chan struct{}
	// held gets a value once a hold is in effect: the process and its whole group are gone, so
	// its data directory may be changed. started gets the outcome of each start the supervisor
	// makes after a crash or a release. Both keep one value at most; a waiter drains them first.
	held    chan struct{}
	started chan error
	// role, when set, is the engine's name now: a Postgres server of the cluster shape is named
	// by its role, which a failover moves to the other server (pgroles.go).
	role func() string
	// restart asks the supervisor to kill the engine as a crash would and start it again at
	// once (the DDL healer's request for a ClickHouse node whose DDL queue stalled, ddlheal.go).
	restart chan struct{}
}

// newEngine is a supervised engine with its request channels.
func newEngine(name, url string, proc func() *process, start func(context.Context, time.Duration) error) *engine {
	return &engine{name: name, url: url, proc: proc, start: start,
		hold: make(chan bool, 1), release: make(chan struct{}, 1), held: make(chan struct{}, 1), started: make(chan error, 1),
		restart: make(chan struct{}, 1)}
}

// nameNow is the engine's name as the state file lists it now.
func (e *engine) nameNow() string {
	if e.role != nil {
		return e.role()
	}
	return e.name
}

// post sends v on a channel that keeps one value at most, dropping it when one is pending.
func post[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// engines lists the supervised engines in start order.
func (s *Stack) engines() []*engine {
	mk := newEngine
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
			case crash := <-e.hold:
				s.holdDown(e, p, crash)
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
				s.log.Warn("engine exited; restarting on the same data and ports", "part", e.nameNow(), "pid", p.Pid(),
					"status", exitStatus(p), "ranFor", time.Since(p.started).Round(time.Millisecond).String(),
					"restartIn", wait.String(), "restarts", restarts, "log", p.spec.logPath)
			}
			clearGroup(p.Pid(), 10*time.Second)
			for {
				if !s.restartPause(e, wait) {
					return
				}
				backoff = min(2*backoff, restartMax)
				t0 := time.Now()
				held, crash, err := s.startUnlessHeld(ctx, e)
				if ctx.Err() != nil {
					return // Stop stops whatever start left running
				}
				if held {
					if np := e.proc(); np != nil && np != p {
						s.holdDown(e, np, crash)
					} else {
						post(e.held, struct{}{})
					}
					select {
					case <-s.stopping:
						return
					case <-e.release:
					}
					wait = 0
					continue
				}
				if err == nil {
					s.log.Info("engine ready again", "part", e.nameNow(), "pid", e.proc().Pid(), "took", time.Since(t0).Round(time.Millisecond).String())
					if err := s.recordEngine(e, e.proc().Pid()); err != nil {
						s.log.Error("state file not updated", "part", e.nameNow(), "error", err)
					}
					post(e.started, nil) // once the state file lists the new pid
					break
				}
				post(e.started, err)
				wait = backoff
				s.log.Error("engine restart failed; retrying", "part", e.nameNow(), "error", err, "restartIn", wait.String())
				if np := e.proc(); np != nil && np != p {
					np.stopping.Store(true)
					_ = np.stop(s.opts.StopTimeout)
					clearGroup(np.Pid(), 10*time.Second)
				}
			}
		}
	})
}

// startUnlessHeld runs e.start, cut short by a hold asked for meanwhile: a failover command
// must not wait out a restart that may take a minute (a killed primary's crash recovery under
// load) only to stop it. held reports such a hold, crash its kind; whatever the start left
// running is then the caller's to take down.
func (s *Stack) startUnlessHeld(ctx context.Context, e *engine) (held, crash bool, err error) {
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan bool, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case c := <-e.hold:
			got <- c
			cancel()
		case <-done:
		}
	})
	err = e.start(startCtx, s.opts.StartTimeout)
	close(done)
	wg.Wait()
	select {
	case crash = <-got:
		return true, crash, err
	default:
		return false, false, err
	}
}

// holdDown takes a held engine's process down, killed as a crash would (crash) or stopped
// cleanly, waits until it and every process of its group are gone, and reports the hold in
// effect on e.held.
func (s *Stack) holdDown(e *engine, p *process, crash bool) {
	p.stopping.Store(true)
	if crash {
		p.Kill()
	} else {
		_ = p.stop(s.opts.StopTimeout)
	}
	<-p.Done()
	clearGroup(p.Pid(), 10*time.Second)
	s.log.Warn("engine down on request; down until asked to start", "part", e.nameNow(), "pid", p.Pid(), "crash", crash)
	post(e.held, struct{}{})
}

// restartPause waits d before a restart attempt; false if Stop began meanwhile. A hold asked
// for meanwhile (nothing runs: the engine crashed, or its last start failed and was stopped)
// is in effect at once and keeps the engine down until released: a Postgres server that fails
// to start over and over can still be rebuilt (pgroles.go).
func (s *Stack) restartPause(e *engine, d time.Duration) bool {
	select {
	case <-s.stopping:
		return false
	case <-time.After(d):
		return true
	case <-e.hold:
		s.log.Warn("engine held down on request between restart attempts", "part", e.nameNow())
		post(e.held, struct{}{})
		select {
		case <-s.stopping:
			return false
		case <-e.release:
			return true
		}
	}
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
