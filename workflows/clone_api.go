package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/metrics"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

// SASourceSplatID is the scene a clone job copies.
var SASourceSplatID = temporal.NewSearchAttributeKeyKeyword("sourceSplatId")

// CloneWorkflowID is the business key of clone jobs: one integration + external user (by the
// customer's record id, which is short and safe whatever the integrator's id holds). At most
// one job runs per key — the spec's one clone at a time per customer — and a finished job frees
// it for the next.
func CloneWorkflowID(integrationID, ownerID string) string {
	return "clone/" + integrationID + "/" + ownerID
}

// CloneInProgress is StartClone's error when the customer already has a job running.
type CloneInProgress struct {
	JobID         string
	SourceSplatID string
}

// Error implements error.
func (e *CloneInProgress) Error() string {
	return fmt.Sprintf("clone job %s of scene %s is in progress", e.JobID, e.SourceSplatID)
}

// StartClone starts a clone job and returns its job id (the run id). A job already running for
// the customer gives *CloneInProgress naming it.
func StartClone(ctx context.Context, c client.Client, taskQueue string, in CloneInput) (string, error) {
	id := CloneWorkflowID(in.IntegrationID, in.OwnerID)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK hands back the running job as if it were this one.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{"sourceSplatId": in.SourceSplatID, "splatId": in.SplatID, "phase": ClonePhasePreparing},
		TypedSearchAttributes: temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID),
			SAExternalUserID.ValueSet(in.ExternalUserID), SASourceSplatID.ValueSet(in.SourceSplatID),
			SASplatID.ValueSet(in.SplatID)),
		StaticSummary: fmt.Sprintf("Clone of scene %s into %s", in.SourceSplatID, in.SplatID),
	}, CloneSceneWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		st, derr := DescribeClone(ctx, c, id, already.RunId)
		if derr != nil {
			return "", derr
		}
		metrics.CloneJobs.WithLabelValues("rejected").Inc()
		return "", &CloneInProgress{JobID: already.RunId, SourceSplatID: st.SourceSplatID}
	}
	if err != nil {
		return "", err
	}
	metrics.CloneJobs.WithLabelValues("started").Inc()
	return run.GetRunID(), nil
}

// CloneRunOf returns the run id of the customer's latest clone job when that job makes the scene
// splatID (CloneInput.SplatID), or ErrCloneNotFound: a keyed retry finds the job its first request
// started rather than starting a second.
func CloneRunOf(ctx context.Context, c client.Client, workflowID, splatID string) (string, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", ErrCloneNotFound
	}
	if err != nil {
		return "", err
	}
	info := d.GetWorkflowExecutionInfo()
	var got string
	if p := info.GetMemo().GetFields()["splatId"]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &got)
	}
	if info.GetType().GetName() != CloneSceneWorkflow || got != splatID {
		return "", ErrCloneNotFound
	}
	return info.GetExecution().GetRunId(), nil
}

// CloneState is where a job stands.
type CloneState struct {
	// Running is true until the job closes; then Result (success) or Err is set.
	Running       bool
	SourceSplatID string
	Copied        int
	Total         int
	Result        *CloneResult
	// Err is the failure: contract.ClientErrorOf gives the client's envelope when it is one.
	Err error
}

// ErrCloneNotFound is DescribeClone's answer for a job that does not exist (or is no longer
// retained).
var ErrCloneNotFound = errors.New("clone job not found")

// DescribeClone reads a job's state from Temporal alone — the memo, the copy's last heartbeat,
// the result — so that it answers even while no worker runs.
func DescribeClone(ctx context.Context, c client.Client, workflowID, runID string) (*CloneState, error) {
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
	var nf *serviceerror.NotFound
	var inv *serviceerror.InvalidArgument
	if errors.As(err, &nf) || errors.As(err, &inv) {
		return nil, ErrCloneNotFound
	}
	if err != nil {
		return nil, err
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != CloneSceneWorkflow {
		return nil, ErrCloneNotFound
	}
	dc := converter.GetDefaultDataConverter()
	st := &CloneState{}
	memo := info.GetMemo().GetFields()
	if p := memo["sourceSplatId"]; p != nil {
		_ = dc.FromPayload(p, &st.SourceSplatID)
	}
	if p := memo["totalObjects"]; p != nil {
		_ = dc.FromPayload(p, &st.Total)
	}
	var phase string
	if p := memo["phase"]; p != nil {
		_ = dc.FromPayload(p, &phase)
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		st.Running = true
		copying := false
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() != "CopyCloneObjects" {
				continue
			}
			copying = true
			// The details survive a worker crash (a retry's first heartbeat starts from them),
			// so the count only grows across attempts.
			var p contract.CloneProgress
			if pa.GetHeartbeatDetails() != nil && dc.FromPayloads(pa.GetHeartbeatDetails(), &p) == nil {
				st.Copied, st.Total = p.Copied, max(st.Total, p.Total)
			}
		}
		// The memo says "copying" in the same workflow task that schedules the copy, so a
		// copying job without a pending copy has finished copying and the workflow has not yet
		// moved to "finalizing": answering 0 there would send the count backwards.
		if phase == ClonePhaseFinalizing || (phase == ClonePhaseCopying && !copying) {
			st.Copied = st.Total
		}
		return st, nil
	}
	var res CloneResult
	if err := c.GetWorkflow(ctx, workflowID, info.GetExecution().GetRunId()).Get(ctx, &res); err != nil {
		st.Err = err
		return st, nil
	}
	st.Copied, st.Result = st.Total, &res
	return st, nil
}

// WaitClone waits until the job closes or ctx ends, whichever is first; DescribeClone then
// tells which.
func WaitClone(ctx context.Context, c client.Client, workflowID, runID string) {
	// The job's own failure is DescribeClone's to report; an unreachable server shows there too.
	_ = c.GetWorkflow(ctx, workflowID, runID).Get(ctx, nil)
}

// PollClone records a poll of a job (see ClonePollSignal). A job that has closed needs none.
// A process forwards at most one poll of a job per pollSignalEvery: each signal is a workflow
// task and history events on the Temporal server, and a client polling every 100 ms spent more
// of the machine on its polls than the copy's own heartbeats. The job's idea of its last poll
// is then at most pollSignalEvery old, a second against an abandonment window of minutes.
func PollClone(ctx context.Context, c client.Client, workflowID, runID string) error {
	if !pollSignals.due(runID, time.Now()) {
		return nil
	}
	err := c.SignalWorkflow(ctx, workflowID, runID, ClonePollSignal, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		pollSignals.forget(runID) // the next poll tries again
	}
	return err
}

// pollSignalEvery is the least time between two poll signals one process sends to a job.
const pollSignalEvery = time.Second

// pollSignals is when this process last signalled each job a poll.
var pollSignals = &signalTimes{last: map[string]time.Time{}}

// signalTimes remembers the last signal per job; entries older than a minute are pruned once a
// minute, so finished jobs do not accumulate.
type signalTimes struct {
	mu     sync.Mutex
	last   map[string]time.Time
	pruned time.Time
}

// due reports whether a poll of runID at now is to be signalled, and if so records it.
func (s *signalTimes) due(runID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.pruned) > time.Minute {
		for id, t := range s.last {
			if now.Sub(t) > time.Minute {
				delete(s.last, id)
			}
		}
		s.pruned = now
	}
	if t, ok := s.last[runID]; ok && now.Sub(t) < pollSignalEvery {
		return false
	}
	s.last[runID] = now
	return true
}

// forget drops runID's record, so its next poll is signalled.
func (s *signalTimes) forget(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, runID)
}
