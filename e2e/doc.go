// Package e2e holds the integration tests that drive splathost over HTTP against the real
// stack (Postgres, ClickHouse, versitygw, Temporal) the test harness starts once per run.
package e2e
