// Package activities holds the side effects of splathost's workflows (object store, Postgres,
// ClickHouse). Each activity takes one input struct, returns one result struct and is
// idempotent, because Temporal may run it more than once.
package activities

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/webhooks"
	"github.com/splathost/splathost/workflows/contract"
)

// Activities holds the dependencies of every activity; its exported methods are the activities.
// Workflows know the activities only by contract (workflows/contract), so this package is free
// to use the stores; the worker wires the clients in.
type Activities struct {
	Ent     *ent.Client
	Objects objectstore.API
	Bucket  string
	// AssetBase prefixes an object key to make its public URL (config.Config.AssetBase); clones
	// rewrite the URLs of their source to their copies with it.
	AssetBase string
	// PublicBase is the gateway origin whose /assets route serves objects
	// (config.Config.PublicBase): levelData may name an asset by the URL an answer gave, and a
	// clone recognises and rewrites those too.
	PublicBase string
	// Views is the ClickHouse view store (analytics.Views).
	Views ViewStore
	// Renditions are the conversion settings of a media worker (nil elsewhere).
	Renditions *RenditionSettings
	// Workflows lists closed rendition workflows for the orphan sweep (the API worker's
	// Temporal client; nil elsewhere).
	Workflows WorkflowLister
	// Events writes webhook events in the transactions of the changes activities make (a
	// finished rendition, clone or retention purge) and starts their deliveries after the
	// commit; Webhooks are the delivery settings (the API worker's; nil on a media worker).
	Events   *events.Outbox
	Webhooks *webhooks.Settings
	Log      *slog.Logger
}

// Activities implements the contract: every name the workflows call, with its input and result.
var _ contract.Activities = (*Activities)(nil)

// Register adds every activity to w and reports how many it registered.
func Register(w worker.Registry, a *Activities) int {
	w.RegisterActivity(a)
	return 1
}

// bucket is the store operations on the activities' bucket.
func (a *Activities) bucket() objectstore.Bucket {
	return objectstore.Bucket{API: a.Objects, Name: a.Bucket}
}
