package testenv

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Traces records the spans of the traces a test watches (it sends their trace id in a
// traceparent header) and drops every other span, so a long test run keeps no memory for
// traffic nobody inspects. It is the in-process product's span processor while no OTLP
// endpoint is configured.
type Traces struct {
	mu    sync.Mutex
	spans map[trace.TraceID][]sdktrace.ReadOnlySpan
}

// NewTraces returns an empty recorder.
func NewTraces() *Traces { return &Traces{spans: map[trace.TraceID][]sdktrace.ReadOnlySpan{}} }

// Watch starts recording the spans of trace id.
func (t *Traces) Watch(id trace.TraceID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.spans[id]; !ok {
		t.spans[id] = nil
	}
}

// Spans returns the ended spans of a watched trace so far.
func (t *Traces) Spans(id trace.TraceID) []sdktrace.ReadOnlySpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), t.spans[id]...)
}

// OnStart implements sdktrace.SpanProcessor.
func (t *Traces) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it keeps the span when its trace is watched.
func (t *Traces) OnEnd(s sdktrace.ReadOnlySpan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if spans, ok := t.spans[s.SpanContext().TraceID()]; ok {
		t.spans[s.SpanContext().TraceID()] = append(spans, s)
	}
}

// Shutdown implements sdktrace.SpanProcessor.
func (t *Traces) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (t *Traces) ForceFlush(context.Context) error { return nil }
