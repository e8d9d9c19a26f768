package scenes

import (
	"context"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/predicate"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
)

// Store runs the scene service's transactional operations on Postgres: each one locks what its
// rule needs, applies the rule (a plain function of this package, tested without Postgres),
// writes the outcome with its webhook events and the scene's change notice in one
// transaction, and starts the events' deliveries after the commit. The caller keeps what
// belongs to its process: the scene cache and the workflows it starts.
type Store struct {
	DB *db.DB
	// Events writes the webhook events of the changes in their transactions.
	Events *events.Outbox
	// Rendition is the deployment's rendition settings: which commits get one (PlanRendition)
	// and the queue a retry goes to.
	Rendition RenditionPolicy
	// Now is the clock of the timestamps the rules set (featuredAt, a ticket's completion).
	Now func() time.Time
}

// lockScene locks the one scene matching where (with extra edges loaded by with) in tx and
// runs fn on it; no match is the 404 that never tells whether the scene exists.
func lockScene(ctx context.Context, tx *ent.Tx, where []predicate.Scene, with func(*ent.SceneQuery), fn func(*ent.Scene) error) error {
	q := tx.Scene.Query().Where(where...).ForUpdate()
	if with != nil {
		with(q)
	}
	cur, err := q.Only(ctx)
	if ent.IsNotFound(err) {
		return ErrNotFound()
	}
	if err != nil {
		return err
	}
	return fn(cur)
}

// live is the scene id of an integration, not archived.
func live(integrationID, id string) []predicate.Scene {
	return []predicate.Scene{scene.ID(id), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()}
}
