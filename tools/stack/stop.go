package stack

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
)

// Failed reports the first infrastructure child (Postgres, ClickHouse, versitygw) that exits on
// its own after start-up, with its log tail. Product binaries are restarted instead
// (supervise.go).
func (s *Stack) Failed() <-chan error { return s.failed }

// watch turns an unexpected exit of the infrastructure into an error on Failed and supervises
// the product binaries.
func (s *Stack) watch() {
	for _, p := range []*process{s.pg.proc, s.ch.proc, s.s3.proc} {
		s.watchProc(p)
	}
	for _, svc := range s.services {
		s.supervise(svc)
	}
}

// watchProc reports p's exit on Failed unless it was stopped on purpose.
func (s *Stack) watchProc(p *process) {
	go func() {
		<-p.Done()
		if !p.stopping.Load() {
			select {
			case s.failed <- p.exitError("unexpectedly"):
			default:
			}
		}
	}()
}

// crashClickHouse kills ClickHouse with SIGKILL, as a crash would, and waits for it to exit.
// The stack stays up; startClickHouse brings it back.
func (s *Stack) crashClickHouse() {
	p := s.ch.proc
	p.stopping.Store(true)
	p.Kill()
	s.log.Warn("clickhouse killed on request", "pid", p.Pid())
}

// startClickHouse starts ClickHouse again on the same data and ports (if it is not running) and
// rewrites the state file with its new pid once it answers.
func (s *Stack) startClickHouse(ctx context.Context) error {
	if !s.ch.proc.Exited() {
		return nil
	}
	if err := s.ch.start(ctx, s.opts.StartTimeout); err != nil {
		return err
	}
	s.watchProc(s.ch.proc)
	s.log.Info("clickhouse started again on request", "pid", s.ch.proc.Pid())
	return s.recordPID("clickhouse", s.ch.proc.Pid())
}

// Stop shuts everything down in reverse dependency order: the services first, so they stop
// using the stores cleanly, then Temporal, versitygw, ClickHouse and Postgres. It removes the
// state file and is safe to call more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
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
		if s.temporal != nil {
			errs = append(errs, s.temporal.stop())
		}
		if s.s3 != nil {
			errs = append(errs, s.s3.stop(s.opts.StopTimeout))
		}
		if s.ch != nil {
			errs = append(errs, s.ch.stop(s.opts.StopTimeout))
		}
		if s.pg != nil {
			errs = append(errs, s.pg.stop(s.opts.StopTimeout))
		}
		if s.lock != nil {
			s.lock.Close() // releases the flock
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
