// Package e2e holds the integration tests that drive splathost over HTTP against the real
// stack (Postgres, ClickHouse, versitygw, Temporal) the test harness starts once per run.
//
// They build only with the e2e tag (`make test` sets it; by hand: go test -tags e2e ./e2e/), so
// `go test ./...` on a fresh checkout runs the unit tests alone, without the stack's servers and
// the built binaries these need; the chaos suite adds the chaos tag (`make chaos`).
package e2e
