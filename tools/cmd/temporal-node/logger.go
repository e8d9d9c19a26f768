package main

import (
	"context"
	"log/slog"
	"os"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// temporalLogger adapts slog to the Temporal server's logger, so the node logs JSON lines like
// the rest of the stack. Fatal exits as Temporal's own logger does: the stack runner supervises
// the node and starts it again.
type temporalLogger struct{ l *slog.Logger }

var (
	_ log.Logger      = temporalLogger{}
	_ log.WithLogger  = temporalLogger{}
	_ log.SLogWrapper = temporalLogger{}
)

// Debug logs at debug level.
func (t temporalLogger) Debug(msg string, tags ...tag.Tag) { t.emit(slog.LevelDebug, msg, tags) }

// Info logs at info level.
func (t temporalLogger) Info(msg string, tags ...tag.Tag) { t.emit(slog.LevelInfo, msg, tags) }

// Warn logs at warn level.
func (t temporalLogger) Warn(msg string, tags ...tag.Tag) { t.emit(slog.LevelWarn, msg, tags) }

// Error logs at error level.
func (t temporalLogger) Error(msg string, tags ...tag.Tag) { t.emit(slog.LevelError, msg, tags) }

// DPanic logs at error level instead of panicking.
func (t temporalLogger) DPanic(msg string, tags ...tag.Tag) { t.emit(slog.LevelError, msg, tags) }

// Panic logs at error level instead of panicking.
func (t temporalLogger) Panic(msg string, tags ...tag.Tag) { t.emit(slog.LevelError, msg, tags) }

// Fatal logs at error level and exits; the runner restarts the node.
func (t temporalLogger) Fatal(msg string, tags ...tag.Tag) {
	t.emit(slog.LevelError, "fatal: "+msg, tags)
	os.Exit(1)
}

// With returns a logger that adds tags to every record.
func (t temporalLogger) With(tags ...tag.Tag) log.Logger {
	args := make([]any, len(tags))
	for i, a := range tagAttrs(tags) {
		args[i] = a
	}
	return temporalLogger{t.l.With(args...)}
}

// SLog exposes the underlying slog logger; Temporal uses it for its slog-based components.
func (t temporalLogger) SLog() *slog.Logger { return t.l }

func (t temporalLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	if t.l.Enabled(context.Background(), level) {
		t.l.LogAttrs(context.Background(), level, msg, tagAttrs(tags)...)
	}
}

func tagAttrs(tags []tag.Tag) []slog.Attr {
	attrs := make([]slog.Attr, len(tags))
	for i, tg := range tags {
		attrs[i] = slog.Any(tg.Key(), tg.Value())
	}
	return attrs
}
