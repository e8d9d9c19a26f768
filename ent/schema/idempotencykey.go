package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// IdempotencyKey is one Idempotency-Key seen on a covered route (contract item 13): who sent it
// for which request, and, once the request finished below 500, the answer to replay. Rows are
// disposable after 24 h and carry no foreign keys, so a customer's deletion never waits on them.
type IdempotencyKey struct{ ent.Schema }

// Mixin of the IdempotencyKey.
func (IdempotencyKey) Mixin() []ent.Mixin { return []ent.Mixin{IDMixin{}} }

// Fields of the IdempotencyKey.
func (IdempotencyKey) Fields() []ent.Field {
	return []ent.Field{
		field.String("integration_id").MaxLen(24).NotEmpty(),
		// external_user_id is empty when the request carried no EU.
		field.String("external_user_id").Default(""),
		field.String("method").MaxLen(16).NotEmpty(),
		field.Text("path").NotEmpty(),
		field.String("key").MaxLen(255).NotEmpty(),
		// scope is SHA-256 over integration, EU, method, path and key: a unique index on the
		// columns themselves could exceed Postgres's index row size with a long path and EU.
		field.Bytes("scope").Unique(),
		// request_hash is SHA-256 of the request body: a reuse with another body is refused.
		field.Bytes("request_hash"),
		// lease names the request that holds the key; a finish or release by a request whose
		// lease was taken over changes nothing.
		field.String("lease").MaxLen(24).NotEmpty(),
		// locked_until bounds how long a request that died mid-way (its process killed) keeps
		// the key: after it a retry with the same body takes the key over.
		field.Time("locked_until").Optional().Nillable(),
		// status is 0 while the first request runs, then the answer's HTTP status.
		field.Int("status").Default(0),
		field.JSON("response_headers", map[string]string{}).Optional(),
		field.Bytes("response_body").Optional().Nillable(),
		field.Time("created_at").Default(time.Now),
	}
}

// Indexes of the IdempotencyKey.
func (IdempotencyKey) Indexes() []ent.Index {
	return []ent.Index{
		// The purge deletes keys older than 24 h.
		index.Fields("created_at"),
	}
}
