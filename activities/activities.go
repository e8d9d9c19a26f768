// Package activities holds the side effects of splathost's workflows (object store, Postgres,
// ClickHouse). Each activity takes one input struct, returns one result struct and is
// idempotent, because Temporal may run it more than once.
package activities

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.temporal.io/sdk/worker"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/events"
)

// ObjectAPI is the part of the S3 API the activities use. *s3.Client implements it; tests
// substitute an in-memory bucket to drive failures and resumption.
type ObjectAPI interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// Activities holds the dependencies of every activity; its exported methods are the activities.
// It names the stores by their clients (ent, the S3 API), not by internal/db and
// internal/objectstore: package workflows references these methods, and must not depend on the
// store packages (internal/arch); the worker wires the clients in.
type Activities struct {
	Ent     *ent.Client
	Objects ObjectAPI
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
	Webhooks *WebhookSettings
	Log      *slog.Logger
}

// Register adds every activity to w and reports how many it registered.
func Register(w worker.Registry, a *Activities) int {
	w.RegisterActivity(a)
	return 1
}
