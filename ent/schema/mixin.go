package schema

import (
	"fmt"
	"time"
	"unicode/utf8"

	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"

	"github.com/splathost/splathost/internal/ids"
)

// IDMixin gives a type the interface's 24-hex string id.
type IDMixin struct{ mixin.Schema }

// Fields of the IDMixin.
func (IDMixin) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").MaxLen(24).NotEmpty().Immutable().DefaultFunc(ids.New),
	}
}

// SerialIDMixin gives a type an id Postgres assigns (identity), in arrival order: the rows of
// queues and logs that nobody addresses by an interface id.
type SerialIDMixin struct{ mixin.Schema }

// Fields of the SerialIDMixin.
func (SerialIDMixin) Fields() []ent.Field {
	return []ent.Field{field.Int64("id")}
}

// TimeMixin records creation and last update times.
type TimeMixin struct{ mixin.Schema }

// Fields of the TimeMixin.
func (TimeMixin) Fields() []ent.Field {
	return append(CreatedAtMixin{}.Fields(), UpdatedAtMixin{}.Fields()...)
}

// CreatedAtMixin records the creation time alone, for rows that are never updated.
type CreatedAtMixin struct{ mixin.Schema }

// Fields of the CreatedAtMixin.
func (CreatedAtMixin) Fields() []ent.Field {
	return []ent.Field{field.Time("created_at").Default(time.Now).Immutable()}
}

// UpdatedAtMixin records the last update time alone, for rows whose creation does not matter.
type UpdatedAtMixin struct{ mixin.Schema }

// Fields of the UpdatedAtMixin.
func (UpdatedAtMixin) Fields() []ent.Field {
	return []ent.Field{field.Time("updated_at").Default(time.Now).UpdateDefault(time.Now)}
}

// IntegrationMixin scopes a row to the integration that owns it: every tenant table carries
// integration_id, and a row never moves to another integration. Ref names the integration's
// edge to the type when the table has a foreign key to integrations; empty, it has none (outboxes
// and logs, which must never block, or be blocked by, the rows they outlive).
type IntegrationMixin struct {
	mixin.Schema
	Ref string
}

// Fields of the IntegrationMixin.
func (IntegrationMixin) Fields() []ent.Field {
	return []ent.Field{field.String("integration_id").MaxLen(24).NotEmpty().Immutable()}
}

// Edges of the IntegrationMixin.
func (m IntegrationMixin) Edges() []ent.Edge {
	if m.Ref == "" {
		return nil
	}
	return []ent.Edge{
		edge.From("integration", Integration.Type).Ref(m.Ref).Field("integration_id").Unique().Required().Immutable(),
	}
}

// SceneVisitorMixin is one embed visitor's action on a scene (a view, a like): the integration,
// the scene and the visitor's opaque id, without foreign keys, since the rows go with the
// scene's view records rather than with the scene row.
type SceneVisitorMixin struct{ mixin.Schema }

// Fields of the SceneVisitorMixin.
func (SceneVisitorMixin) Fields() []ent.Field {
	return append(IntegrationMixin{}.Fields(),
		field.String("scene_id").MaxLen(24).NotEmpty().Immutable(),
		field.String("visitor_id").NotEmpty().Immutable(),
	)
}

// MaxRunes validates a string's length in characters, as the interface counts them; ent's
// MaxLen counts bytes, which would reject a 200-character title in a non-Latin script.
func MaxRunes(n int) func(string) error {
	return func(s string) error {
		if utf8.RuneCountInString(s) > n {
			return fmt.Errorf("longer than %d characters", n)
		}
		return nil
	}
}
