package stack

import (
	"context"
	"encoding/json"
	"time"
)

// Restart policy of supervised children: the first restart comes almost at once (a crash of a
// healthy service costs its clients well under a second), repeated crashes back off
// exponentially up to the cap, and a child that ran for restartReset before crashing starts the
// sequence over.
const (
	restartBase  = 100 * time.Millisecond
	restartMax   = 30 * time.Second
	restartReset = 30 * time.Second
)

// supervise keeps a product binary running like an orchestrator would: when its process exits
// without having been asked to, it is started again after a backoff, with the exit status and
// the restart logged, and the state file lists its new pid. A child that cannot be started is
// retried with the same backoff. Stop ends the supervision before it stops the children, so
// Ctrl-C still stops everything.
func (s *Stack) supervise(svc *service) {
	go func() {
		backoff := restartBase
		restarts := 0
		for {
			s.supMu.Lock()
			p := svc.proc
			s.supMu.Unlock()
			<-p.Done()
			if p.stopping.Load() || s.shuttingDown() {
				return
			}
			if time.Since(p.started) >= restartReset {
				backoff = restartBase
			}
			restarts++
			s.log.Warn("child exited; restarting", "part", svc.def.name, "pid", p.Pid(), "status", exitStatus(p),
				"ranFor", time.Since(p.started).Round(time.Millisecond).String(), "restartIn", backoff.String(),
				"restarts", restarts, "log", p.spec.logPath)
			for {
				if !s.pause(backoff) {
					return
				}
				backoff = min(2*backoff, restartMax)
				s.supMu.Lock()
				if s.shuttingDown() {
					s.supMu.Unlock()
					return
				}
				np, err := startProcess(p.spec)
				if err == nil {
					svc.proc = np
				}
				s.supMu.Unlock()
				if err != nil {
					s.log.Error("restart failed; retrying", "part", svc.def.name, "error", err, "restartIn", backoff.String())
					continue
				}
				s.log.Info("child restarted", "part", svc.def.name, "pid", np.Pid(), "restarts", restarts)
				if err := s.recordPID(svc.def.name, np.Pid()); err != nil {
					s.log.Error("state file not updated", "part", svc.def.name, "error", err)
				}
				go s.logReady(svc, np)
				break
			}
		}
	}()
}

// logReady logs when a restarted child answers its readiness check again, or that it did not
// within the start timeout (it keeps being supervised either way).
func (s *Stack) logReady(svc *service, p *process) {
	ctx, cancel := s.untilStopping()
	defer cancel()
	t0 := time.Now()
	err := waitHealthy(ctx, svc.def.name, p, p.spec.logPath, s.opts.StartTimeout, httpCheck("http://"+svc.def.readyAddr+"/readyz", ""))
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.log.Warn("restarted child is not ready", "part", svc.def.name, "pid", p.Pid(), "error", err)
		return
	}
	s.log.Info("ready again", "part", svc.def.name, "pid", p.Pid(), "took", time.Since(t0).Round(time.Millisecond).String())
}

// untilStopping is a context cancelled when Stop begins (or by its cancel), for the waits of
// the supervisors, which Stop must not sit behind.
func (s *Stack) untilStopping() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// exitStatus is how a child ended ("exit status 1", "signal: killed").
func exitStatus(p *process) string {
	if p.Err() == nil {
		return "exit status 0"
	}
	return p.Err().Error()
}

// pause waits d before a restart; false if Stop began meanwhile (the restart is abandoned).
func (s *Stack) pause(d time.Duration) bool {
	select {
	case <-s.stopping:
		return false
	case <-time.After(d):
		return true
	}
}

// shuttingDown reports whether Stop has begun.
func (s *Stack) shuttingDown() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// recordPID rewrites the state file with a part's new pid, so tools and tests reading it find
// the running process. It writes nothing once Stop has begun (Stop removes the file).
func (s *Stack) recordPID(name string, pid int) error {
	return s.updateState(func(st *State) { setPID(st, name, pid) })
}

// recordEngine is recordPID for an engine, under the name its role has when the file is
// written (a failover renames the Postgres servers, pgroles.go).
func (s *Stack) recordEngine(e *engine, pid int) error {
	return s.updateState(func(st *State) { setPID(st, e.nameNow(), pid) })
}

// setPID sets the pid of the processes listed under name.
func setPID(st *State, name string, pid int) {
	for i, p := range st.Processes {
		if p.Name == name {
			st.Processes[i].PID = pid
		}
	}
}

// updateState applies change to the stack's state and rewrites the state file with it, both
// under one lock, so changes from the supervisors and the control commands never interleave.
// The file is left alone before Start has written it and once Stop has begun (Stop removes it).
func (s *Stack) updateState(change func(st *State)) error {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	change(&s.state)
	if !s.stateSaved || s.shuttingDown() {
		return nil
	}
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.opts.StateFile, append(b, '\n'), 0o600)
}
