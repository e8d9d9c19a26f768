package scenes

import (
	"strings"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/ids"
)

// ErrNotFound is every "no such scene for you" answer: absent, archived, in another
// integration or another customer's — existence is never disclosed.
func ErrNotFound() error { return apperr.NotFound("splat not found") }

// ParseID reads a scene id from a request path, lower-cased; anything but 24 hex characters
// names no scene (ErrNotFound, a 404). The scene service's routes and the session service's
// embed API read their path ids with it.
func ParseID(raw string) (string, error) {
	if !ids.Valid(raw) {
		return "", ErrNotFound()
	}
	return strings.ToLower(raw), nil
}
