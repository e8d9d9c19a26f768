//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceFollowsACloneIntoTheWorkflow sends a clone request with a W3C traceparent and
// finds one trace holding the request's server span, the workflow start, the workflow run and
// each activity of the job, every span's parent inside the same trace back to the caller's.
func TestTraceFollowsACloneIntoTheWorkflow(t *testing.T) {
	inProcessOnly(t)
	require.NotNil(t, env.Traces, "the test product records spans when no OTLP endpoint is set")
	a := newTenant(t)
	src := commitScene(t, a, "traced", 12)

	var tid trace.TraceID
	var parent trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(parent[:])
	env.Traces.Watch(tid)
	h := a.keys("traced")
	h["traceparent"] = "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(parent[:]) + "-01"
	requireCloneSuccess(t, do(t, "POST", clonePath(src["id"].(string)), h, nil), 201, src)

	want := []string{"POST /api/v1/splats/:splatId/clone", "StartWorkflow:CloneScene", "RunWorkflow:CloneScene",
		"StartActivity:PrepareClone", "RunActivity:PrepareClone", "RunActivity:CopyCloneObjects", "RunActivity:FinalizeClone"}
	var spans []sdktrace.ReadOnlySpan
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		spans = env.Traces.Spans(tid)
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = s.Name()
		}
		for _, w := range want {
			assert.Contains(c, names, w)
		}
	}, 30*time.Second, 100*time.Millisecond)

	ids := map[trace.SpanID]bool{parent: true}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	for _, s := range spans {
		require.True(t, ids[s.Parent().SpanID()], "%s hangs off a span of the same trace", s.Name())
		if s.Name() == "POST /api/v1/splats/:splatId/clone" {
			require.Equal(t, parent, s.Parent().SpanID(), "the server span continues the caller's span")
		}
	}
}
