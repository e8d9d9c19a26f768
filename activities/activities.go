// Package activities holds the side effects of splathost's workflows (object store, Postgres,
// ClickHouse). Each activity takes one input struct, returns one result struct and is
// idempotent, because Temporal may run it more than once.
package activities

import "go.temporal.io/sdk/worker"

// Register adds every activity to w and reports how many it registered.
func Register(w worker.Registry) int { return 0 }
