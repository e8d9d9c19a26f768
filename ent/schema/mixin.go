package schema

import (
	"fmt"
	"time"
	"unicode/utf8"

	"entgo.io/ent"
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

// TimeMixin records creation and last update times.
type TimeMixin struct{ mixin.Schema }

// Fields of the TimeMixin.
func (TimeMixin) Fields() []ent.Field {
	return []ent.Field{
		field.Time("created_at").Default(time.Now).Immutable(),
		field.Time("updated_at").Default(time.Now).UpdateDefault(time.Now),
	}
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
