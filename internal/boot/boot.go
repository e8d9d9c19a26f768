// Package boot assembles splathost's processes from their parts: logging, tracing, the stores,
// the service and gateway apps, the worker. Every binary in cmd/ and the test harness use it,
// so there is one way to start each piece.
package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/httpx"
)

// Logger returns the JSON logger every process writes to stdout.
func Logger(cfg config.Config, component string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level})).With("component", component)
}

// Telemetry installs the W3C trace-context propagator and, when SPLATHOST_OTLP_ENDPOINT is set,
// an OTLP/HTTP trace exporter. Tracing is off (no-op spans) by default. The returned function
// flushes and stops the exporter.
func Telemetry(ctx context.Context, cfg config.Config, service string) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if cfg.OTLPEndpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(cfg.OTLPEndpoint), otlptracehttp.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("splathost-"+service))),
	)
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Serve runs app on addr until ctx ends, then shuts it down gracefully within timeout.
func Serve(ctx context.Context, app *fiber.App, addr string, timeout time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return ServeListener(ctx, app, ln, timeout)
}

// ServeListener is Serve on an open listener.
func ServeListener(ctx context.Context, app *fiber.App, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := app.ShutdownWithTimeout(timeout); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// ServiceApp is the app of a service running in its own process: health endpoints, metrics
// behind the admin token (httpx.MetricsGuard), then only requests whose caller a gateway
// signed, then the service's routes.
func ServiceApp(name string, cfg config.Config, log *slog.Logger, prefixes []string,
	register func(fiber.Router), checks map[string]httpx.Check) *fiber.App {
	app := httpx.NewApp(name, log, cfg.BodyLimit, cfg.RequestBudget)
	httpx.MountHealth(app, log, checks)
	httpx.MountMetrics(app, httpx.MetricsGuard(cfg.AdminToken, []byte(cfg.InternalSecret)), cfg.Pprof)
	trust := httpx.TrustSignedCaller([]byte(cfg.InternalSecret))
	for _, p := range prefixes {
		app.Use(strings.TrimSuffix(p, "/"), trust)
	}
	register(app)
	app.Use(httpx.Fallback(app))
	return app
}

// Fatal logs err and exits; for main functions only.
func Fatal(log *slog.Logger, msg string, err error) {
	log.Error(msg, "error", err)
	os.Exit(1)
}
