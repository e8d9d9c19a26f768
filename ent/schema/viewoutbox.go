package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// ViewOutbox is the durable queue of accepted view beacons (POST /api/embed/views): the
// request writes the row and answers 202, and the view streamer (analytics.Streamer) moves rows
// to ClickHouse in id order, raising scenes.view_count and deleting the rows in one Postgres
// transaction. A view is therefore never lost while ClickHouse is down or restarting, and the
// row id doubles as the event id ClickHouse deduplicates on when an insert is retried. No
// foreign key: a row may outlive its scene (its view is then dropped with the scene's others).
type ViewOutbox struct{ ent.Schema }

// Mixin of the ViewOutbox: the id Postgres assigns keeps the rows in arrival order.
func (ViewOutbox) Mixin() []ent.Mixin { return []ent.Mixin{SerialIDMixin{}, SceneVisitorMixin{}} }

// Fields of the ViewOutbox.
func (ViewOutbox) Fields() []ent.Field {
	return []ent.Field{field.Time("viewed_at").Immutable()}
}

// Indexes of the ViewOutbox.
func (ViewOutbox) Indexes() []ent.Index {
	return []ent.Index{
		// Deleting a scene's views also drops its rows still waiting here.
		index.Fields("scene_id"),
	}
}
