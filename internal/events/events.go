// Package events is the webhook outbox (contract item 12): the one function every writer of a
// change calls, inside the change's own transaction, to record the event for each endpoint of
// the integration that subscribed to it. Services and activities both use it (neither may
// import the other), and the worker's delivery workflows read what it wrote. It also holds the
// pieces of a delivery that need no Temporal: sealing secrets, signing bodies and the rules on
// target addresses.
package events

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/ent/webhookdelivery"
	"github.com/splathost/splathost/sdk/go/webhook"
)

// The event types of contract item 12. They and the data types below are the Go SDK's
// (sdk/go/webhook), so the service writes exactly the names and fields receivers decode; the
// product may import the SDK, never the reverse.
const (
	SplatCreated        = webhook.SplatCreated
	SplatUpdated        = webhook.SplatUpdated
	SplatPublished      = webhook.SplatPublished
	SplatReady          = webhook.SplatReady
	SplatDeleted        = webhook.SplatDeleted
	CloneSucceeded      = webhook.CloneSucceeded
	CloneFailed         = webhook.CloneFailed
	ExternalUserDeleted = webhook.ExternalUserDeleted
	RetentionArchived   = webhook.RetentionArchived
	RetentionRestored   = webhook.RetentionRestored
	RetentionPurged     = webhook.RetentionPurged
)

// Types lists every event type, in the order the API documents them.
var Types = webhook.Types

// Delivery names one outbox row to deliver after its transaction commits. Attempted counts
// the attempts already made before its workflow starts (1 after a failed direct attempt: the
// workflow then waits the first backoff before its own).
type Delivery struct {
	ID            string
	IntegrationID string
	WebhookID     string
	Type          string
	Attempted     int
}

// Batch collects the deliveries one transaction wrote, for Outbox.Flush after the commit. The
// zero value is ready to use; it is not safe for concurrent use.
type Batch struct{ deliveries []Delivery }

// Deliveries are the rows the batch holds.
func (b *Batch) Deliveries() []Delivery { return b.deliveries }

// Starter takes committed deliveries: the Dispatcher of a process (a direct first attempt),
// or webhookstart.HandOff (a workflow per delivery). A failure is the starter's to log:
// the rows stay pending and the webhook re-drive starts them.
type Starter interface {
	StartDeliveries(ctx context.Context, ds []Delivery)
}

// Renderer renders a scene as the API's list item (services/scene), for the splat.* events.
type Renderer func(sc *ent.Scene, ownerEU, productSlug string) any

// Outbox writes events. A nil Starter leaves the start to the re-drive; Render is needed only by
// writers of splat item events.
type Outbox struct {
	Starter Starter
	Render  Renderer
	Log     *slog.Logger
	// Now is the clock of the events' timestamps (time.Now when nil).
	Now func() time.Time
}

// envelope is the body of every delivery: {type, timestamp, sequence, data}. sequence is
// metadata beside data, where Standard Webhooks 1.0 allows it, so no type's data changes shape.
type envelope struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Sequence  int64  `json:"sequence"`
	Data      any    `json:"data"`
}

// Subscribed reports whether an endpoint with the given event filter wants typ (an empty filter
// wants everything).
func Subscribed(filter []string, typ string) bool {
	return len(filter) == 0 || slices.Contains(filter, typ)
}

// endpointsAndSequence lists the live endpoints of the integration subscribed to typ, one per
// URL (the oldest: endpoints of one integration sharing a URL collapse into one delivery per
// event, so registering a receiver twenty times does not multiply its load and the deployment's
// by twenty), and draws the event's number from webhook_event_seq, in one round trip: the one-row subquery is
// evaluated once whether or not an endpoint exists (a number an event without endpoints takes
// is simply never seen; the numbers need only rise).
//
// Why the number orders one resource's events: every writer emits while its transaction holds
// the row lock of the resource it changed (the scene row it inserted, updated, locked FOR UPDATE
// or deleted; the customer row for externalUser.deleted; a clone.failed is written once per
// job). A second writer of the same resource therefore draws its number only after the first
// has committed, so it draws a higher one (the sequence has CACHE 1: nextval rises in time
// across sessions). Numbers rise in commit order per resource, never repeat, and are the same on
// every retry and redelivery, being part of the stored body. Across resources they order
// nothing. Deliveries stay parallel: serialising them per scene would hold every later event of
// a scene behind one failing delivery's backoff (up to 2 h per wait).
func endpointsAndSequence(ctx context.Context, tx *ent.Tx, integrationID, typ string) ([]string, int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT e.id, e.url, e.events, s.n
		FROM (SELECT nextval('webhook_event_seq') AS n) s
		LEFT JOIN webhook_endpoints e ON e.integration_id = $1 AND e.deleted_at IS NULL
		ORDER BY e.created_at, e.id`, integrationID)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ids []string
	var seq int64
	urls := map[string]bool{}
	for rows.Next() {
		var id, url sql.NullString
		var filter []byte
		if err := rows.Scan(&id, &url, &filter, &seq); err != nil {
			return nil, 0, err
		}
		if !id.Valid {
			continue // no endpoint: the LEFT JOIN's one row
		}
		var events []string
		if len(filter) > 0 {
			if err := json.Unmarshal(filter, &events); err != nil {
				return nil, 0, fmt.Errorf("events of endpoint %s: %w", id.String, err)
			}
		}
		if Subscribed(events, typ) && !urls[url.String] {
			urls[url.String] = true
			ids = append(ids, id.String)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return ids, seq, rows.Close()
}

// Emit writes one delivery row per live endpoint of the integration subscribed to typ, in tx, and
// adds them to b. data is called only when some endpoint wants the event, so a change of an
// integration without webhooks costs one indexed query. tx must already hold the row lock of the
// resource the event is about (see endpointsAndSequence): that is what orders its sequence.
func (o *Outbox) Emit(ctx context.Context, tx *ent.Tx, b *Batch, integrationID, typ string, data func() (any, error)) error {
	return o.emit(ctx, tx, b, "", integrationID, typ, data)
}

// EmitOnce is Emit for an event that a retried writer may emit again (a clone's rollback): the
// rows' ids derive from key and the endpoint, and a row already written is kept as it is, so
// the event is recorded once per endpoint however often the writer runs.
func (o *Outbox) EmitOnce(ctx context.Context, tx *ent.Tx, b *Batch, key, integrationID, typ string, data func() (any, error)) error {
	return o.emit(ctx, tx, b, key, integrationID, typ, data)
}

// onceID is the delivery id of (key, endpoint): 24 hex characters like every other id.
func onceID(key, endpointID string) string {
	h := sha256.Sum256([]byte(key + "\x00" + endpointID))
	return hex.EncodeToString(h[:12])
}

func (o *Outbox) emit(ctx context.Context, tx *ent.Tx, b *Batch, key, integrationID, typ string, data func() (any, error)) error {
	eps, seq, err := endpointsAndSequence(ctx, tx, integrationID, typ)
	if err != nil {
		return fmt.Errorf("webhook endpoints of %s: %w", integrationID, err)
	}
	if len(eps) == 0 {
		return nil
	}
	d, err := data()
	if err != nil {
		return err
	}
	now := time.Now
	if o != nil && o.Now != nil {
		now = o.Now
	}
	body, err := json.Marshal(envelope{Type: typ, Timestamp: now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Sequence: seq, Data: d})
	if err != nil {
		return fmt.Errorf("webhook event %s: %w", typ, err)
	}
	creates := make([]*ent.WebhookDeliveryCreate, len(eps))
	for i, e := range eps {
		creates[i] = tx.WebhookDelivery.Create().SetIntegrationID(integrationID).SetEndpointID(e).
			SetType(typ).SetPayload(string(body))
		if key != "" {
			creates[i].SetID(onceID(key, e))
		}
	}
	bulk := tx.WebhookDelivery.CreateBulk(creates...)
	if key != "" {
		err = bulk.OnConflictColumns(webhookdelivery.FieldID).DoNothing().Exec(ctx)
	} else {
		err = bulk.Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("webhook deliveries of %s: %w", typ, err)
	}
	for i, e := range eps {
		id, _ := creates[i].Mutation().ID()
		b.deliveries = append(b.deliveries, Delivery{ID: id, IntegrationID: integrationID, WebhookID: e, Type: typ})
	}
	return nil
}

// The data of each event type (webhook.Event's Data), defined once in the SDK.
type (
	// SplatData is the data of splat.created, updated, published and ready: {splat: item}.
	SplatData = webhook.SplatData
	// SceneRef is the data of splat.deleted and the retention events: {splatId, externalUserId}.
	SceneRef = webhook.SceneRef
	// CloneSucceededData is the data of clone.succeeded.
	CloneSucceededData = webhook.CloneSucceededData
	// CloneFailedData is the data of clone.failed.
	CloneFailedData = webhook.CloneFailedData
	// ExternalUserData is the data of externalUser.deleted.
	ExternalUserData = webhook.ExternalUserData
)

// EmitSplat emits a splat item event for sc, rendered as the integration sees it (no caller:
// isOwner false). ownerEU is the owner's external user id, or "" to look it up.
func (o *Outbox) EmitSplat(ctx context.Context, tx *ent.Tx, b *Batch, typ string, sc *ent.Scene, ownerEU string) error {
	return o.Emit(ctx, tx, b, sc.IntegrationID, typ, func() (any, error) {
		if o == nil || o.Render == nil {
			return nil, fmt.Errorf("webhook event %s: no scene renderer wired", typ)
		}
		slug, err := tx.Integration.Query().Where(integration.ID(sc.IntegrationID)).
			Select(integration.FieldProductSlug).String(ctx)
		if err != nil {
			return nil, fmt.Errorf("webhook event %s: product slug: %w", typ, err)
		}
		if ownerEU == "" {
			if ownerEU, err = tx.Scene.QueryOwner(sc).Select(externaluser.FieldExternalUserID).String(ctx); err != nil {
				return nil, fmt.Errorf("webhook event %s: owner: %w", typ, err)
			}
		}
		item, err := json.Marshal(o.Render(sc, ownerEU, slug))
		if err != nil {
			return nil, fmt.Errorf("webhook event %s: %w", typ, err)
		}
		return SplatData{Splat: item}, nil
	})
}

// Value wraps fixed data for Emit.
func Value(v any) func() (any, error) { return func() (any, error) { return v, nil } }

// flushTimeout bounds the start of a batch's workflows, detached from the request or activity
// that wrote it.
const flushTimeout = time.Minute

// Flush starts the workflows of a committed batch, in the background: the rows already make
// the events durable, so nobody waits for Temporal, and a start that fails (or a process that
// dies first) is left to the re-drive.
func (o *Outbox) Flush(ctx context.Context, b *Batch) {
	if o == nil || o.Starter == nil || b == nil || len(b.deliveries) == 0 {
		return
	}
	ds := b.deliveries
	b.deliveries = nil
	startInBackground(ctx, o.Starter, ds)
}

// startInBackground hands committed deliveries to st detached from ctx's cancellation and
// bounded by flushTimeout: nobody waits for it, and what st cannot take is the re-drive's.
func startInBackground(ctx context.Context, st Starter, ds []Delivery) {
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		st.StartDeliveries(ctx, ds)
	}()
}

// MarkDispatched records that the deliveries' workflows are running, so the re-drive leaves
// them alone.
func MarkDispatched(ctx context.Context, c *ent.Client, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return c.WebhookDelivery.Update().
		Where(webhookdelivery.IDIn(ids...), webhookdelivery.DispatchedAtIsNil(), webhookdelivery.StateEQ(webhookdelivery.StatePending)).
		SetDispatchedAt(time.Now()).Exec(ctx)
}
