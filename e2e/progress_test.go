//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/splathost/splathost/workflows"
)

// Waits on long work (a rendition, a clone, a workflow, a sweep) fail when the work stops
// moving or ends wrong, never because the wall clock passed some figure: a machine that is
// slow, loaded or new still passes. Progress is what the product exposes (a rendition's state,
// phase and heartbeats, a clone's copied count, a workflow's history), read as a mark: any
// change of the mark is progress.
const (
	// hangGuard is the one wall-clock bound on long work in the suite: a guard against a
	// hang that keeps moving its mark for ever, far above any honest run on a slow machine.
	hangGuard = 20 * time.Minute
	// stallLimit is how long long work may show no sign of life at all before a wait gives
	// up on it. A conversion heartbeats every few seconds (Temporal records one at least every
	// 24 s), so this many minutes without any change is work that stopped.
	stallLimit = 3 * time.Minute
)

// awaitProgress polls poll every interval until it reports done. poll's mark describes where
// the work stands; the wait fails when the mark stays the same for stallLimit (the work
// stopped), or, as a guard against hangs only, after hangGuard.
func awaitProgress(t testing.TB, what string, every time.Duration, poll func() (done bool, mark string)) {
	t.Helper()
	start, moved, last := time.Now(), time.Now(), ""
	for {
		done, mark := poll()
		if done {
			return
		}
		if mark != last {
			last, moved = mark, time.Now()
		}
		if time.Since(moved) > stallLimit {
			t.Fatalf("%s: no progress for %s (the work stopped); last seen: %s", what, stallLimit, last)
		}
		if time.Since(start) > hangGuard {
			t.Fatalf("%s: not done after the %s hang guard, though still moving; last seen: %s", what, hangGuard, last)
		}
		time.Sleep(every)
	}
}

// eventually is require.Eventually for long work: cond is checked until true, progress marks
// the work it waits on (see awaitProgress).
func eventually(t testing.TB, what string, cond func() bool, progress func() string) {
	t.Helper()
	awaitProgress(t, what, 200*time.Millisecond, func() (bool, string) {
		if cond() {
			return true, ""
		}
		return false, progress()
	})
}

// workflowMark is the progress of the named workflows: each one's status, history length and
// pending activities (attempt, last heartbeat and its details). A workflow not (yet) started
// reads as absent.
func workflowMark(workflowIDs ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, id := range workflowIDs {
		d, err := env.Process.Temporal.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			fmt.Fprintf(&b, "[%s absent]", id)
			continue
		}
		info := d.GetWorkflowExecutionInfo()
		fmt.Fprintf(&b, "[%s %s history=%d", id, info.GetStatus(), info.GetHistoryLength())
		for _, pa := range d.GetPendingActivities() {
			fmt.Fprintf(&b, " %s#%d beat=%s %s", pa.GetActivityType().GetName(), pa.GetAttempt(),
				pa.GetLastHeartbeatTime().AsTime().Format(time.RFC3339Nano), pa.GetHeartbeatDetails().String())
		}
		b.WriteString("]")
	}
	return b.String()
}

// pipelineMark is the progress of the rendition pipeline as a whole: the scenes that left
// pending (of any test), and the workflows and heartbeats of every running conversion. A
// scene waiting for its turn behind other conversions moves as they do.
func pipelineMark() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var finished, started int64
	_ = env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE processing_state <> 'pending'),
		count(*) FILTER (WHERE rendition_started_at IS NOT NULL) FROM scenes`).Scan(&finished, &started)
	res, err := env.Process.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf(`WorkflowType = '%s' AND ExecutionStatus = 'Running'`, workflows.SceneRenditionsWorkflow), PageSize: 50})
	var running []string
	if err == nil {
		for _, e := range res.GetExecutions() {
			running = append(running, e.GetExecution().GetWorkflowId())
		}
	}
	return fmt.Sprintf("finished=%d started=%d running=%s", finished, started, workflowMark(running...))
}

// renditionMark is the progress of one scene's rendition: its workflow, then the pipeline.
func renditionMark(sceneID string) string {
	return workflowMark(workflows.RenditionWorkflowID(sceneID)) + " " + pipelineMark()
}

// waitCloneJob waits for a clone job to close, however long its copy takes on this machine,
// and returns its final state; it fails when the job stops moving (its copied count, history
// and heartbeats all still).
func waitCloneJob(t testing.TB, workflowID, runID string) *workflows.CloneState {
	t.Helper()
	var st *workflows.CloneState
	awaitProgress(t, "clone job "+workflowID, 100*time.Millisecond, func() (bool, string) {
		s, err := workflows.DescribeClone(context.Background(), env.Process.Temporal, workflowID, runID)
		if err != nil {
			return false, "describe: " + err.Error()
		}
		st = s
		return !s.Running, fmt.Sprintf("copied=%d/%d %s", s.Copied, s.Total, workflowMark(workflowID))
	})
	return st
}

// purgeMark is the progress of an integration's purges: its open outbox rows and what its key
// space still holds in the bucket.
func purgeMark(t *testing.T, integrationID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var open int
	_ = env.Process.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM asset_purges WHERE integration_id = $1 AND done_at IS NULL`,
		integrationID).Scan(&open)
	return fmt.Sprintf("open purges=%d objects=%d", open, len(objectsUnder(t, store(t), "i/"+integrationID+"/")))
}

// deliveryMark is the progress of an integration's webhook deliveries: their rows by state and
// their attempts so far.
func deliveryMark(integrationID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := env.Process.DB.Pool.Query(ctx, `SELECT d.state::text, count(*), coalesce(sum(d.attempts), 0)
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE e.integration_id = $1 GROUP BY 1 ORDER BY 1`, integrationID)
	if err != nil {
		return "deliveries: " + err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var state string
		var n, attempts int64
		if rows.Scan(&state, &n, &attempts) == nil {
			fmt.Fprintf(&b, "%s=%d(%d attempts) ", state, n, attempts)
		}
	}
	return b.String()
}
