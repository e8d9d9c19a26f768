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

// Fields of the ViewOutbox.
func (ViewOutbox) Fields() []ent.Field {
	return []ent.Field{
		// id is assigned by Postgres (identity), in arrival order.
		field.Int64("id"),
		field.String("integration_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("scene_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("visitor_id").NotEmpty().Immutable(),
		field.Time("viewed_at").Immutable(),
	}
}

// Indexes of the ViewOutbox.
func (ViewOutbox) Indexes() []ent.Index {
	return []ent.Index{
		// Deleting a scene's views also drops its rows still waiting here.
		index.Fields("scene_id"),
	}
}
