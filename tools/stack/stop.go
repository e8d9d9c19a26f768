package stack

import (
	"errors"
	"os"
	"sync"
	"time"
)

// watch supervises the engines (engines.go) and the product binaries (supervise.go) and, in the
// cluster shape, restarts a ClickHouse node whose DDL queue stalled (ddlheal.go).
func (s *Stack) watch() {
	s.engineList = s.engines()
	for _, e := range s.engineList {
		s.superviseEngine(e)
	}
	for _, svc := range s.services {
		s.supervise(svc)
	}
	s.healDDL()
}

// engine is the supervised engine of that name; nil before the stack is up.
func (s *Stack) engine(name string) *engine {
	for _, e := range s.engineList {
		if e.name == name {
			return e
		}
	}
	return nil
}

// crashClickHouse has ClickHouse's supervisor kill it with SIGKILL, as a crash would, and keep
// it down until startClickHouse: the tests of what depends on it (the view streamer, trending)
// need it gone for a while, not restarted at once.
func (s *Stack) crashClickHouse() { signalEngine(s.engine(s.ch.name), true) }

// startClickHouse lets ClickHouse's supervisor start it again on the same data and ports; the
// state file lists its new pid once it answers. It does nothing while ClickHouse runs.
func (s *Stack) startClickHouse() { signalEngine(s.engine(s.ch.name), false) }

// signalEngine posts a hold (or release) request to e's supervisor, one pending at most.
func signalEngine(e *engine, hold bool) {
	if e == nil {
		return
	}
	if hold {
		post(e.hold, true)
	} else {
		post(e.release, struct{}{})
	}
}

// Stop ends the supervision and shuts everything down in reverse dependency order: the services first, so they stop
// using the stores cleanly, then Temporal, versitygw, ClickHouse and Postgres. It removes the
// state file and is safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.closeControl()
		s.supMu.Lock()
		close(s.stopping)
		procs := make([]*process, len(s.services))
		for i, svc := range s.services {
			procs[i] = svc.proc
		}
		s.supMu.Unlock()
		s.stateMu.Lock()
		if s.stateSaved {
			_ = os.Remove(s.opts.StateFile)
		}
		s.stateMu.Unlock()
		var errs []error
		// Services stop in parallel: each has its own drain timeout.
		var wg sync.WaitGroup
		svcErrs := make([]error, len(procs))
		for i, p := range procs {
			wg.Go(func() { svcErrs[i] = p.stop(s.cfg.ShutdownTimeout + 5*time.Second) })
		}
		wg.Wait()
		errs = append(errs, svcErrs...)
		// The engines' supervisors return first (a restart in progress is cancelled), so the
		// processes stopped below are the current ones and none starts after.
		s.engineWG.Wait()
		// A failover command in progress gives up (it waits on stopping) before the servers
		// it changes are stopped.
		s.roleMu.Lock()
		defer s.roleMu.Unlock()
		if s.temporal != nil {
			errs = append(errs, s.temporal.stop(s.opts.StopTimeout))
		}
		if s.cluster != nil {
			errs = append(errs, s.clusterStops(s.opts.StopTimeout))
		} else if s.s3 != nil {
			errs = append(errs, s.s3.stop(s.opts.StopTimeout))
		}
		if s.cluster == nil && s.ch != nil {
			errs = append(errs, s.ch.stop(s.opts.StopTimeout))
		}
		if s.cluster == nil && s.pg != nil {
			errs = append(errs, s.pg.stop(s.opts.StopTimeout))
		}
		if s.lock != nil {
			s.lock.Close() // releases the flock
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
