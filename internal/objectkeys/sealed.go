package objectkeys

import (
	"strings"
	"time"
)

// SealedKindPrefix marks the folders of the committed copies of uploads. An upload URL names a
// key in an upload folder (i/<integration>/u/<customer>/<upload kind>/<folder id>/<file>) and
// stays valid for its whole window, after the commit and after a delete too. So the commit
// copies the verified bytes to the upload's sealed folder
// (i/<integration>/u/<customer>/sealed-<upload kind>/<folder id>/<file>), which no upload URL
// ever names, and every reader of a committed scene reads from there: a later PUT to an upload
// URL can neither change what a scene serves nor recreate anything a scene reads, and the
// bucket sweep removes what such a PUT leaves.
const SealedKindPrefix = "sealed-"

// SealedAttemptAge is how old a sealed copy under an upload ticket not yet committed may grow
// before the bucket sweep takes it for what a failed commit left (a commit removes its copies
// when it fails, and this is the fallback when it could not). No commit lasts that long: the
// gateway gives up on any request after a minute (httpx.UpstreamTimeout). A commit trusts an
// earlier attempt's copy only while it is younger than half this age, so the sweep never takes
// a copy a commit in flight counted on.
const SealedAttemptAge = 5 * time.Minute

// Sealed returns where the committed copy of an upload key lives: the key with its upload kind
// k replaced by sealed-k (reversible, so the sweep finds the upload's ticket). Keys the service
// writes itself (clone copies, renditions, sealed copies) and keys outside the scene key space
// are their own stored form. The mapping keeps everything after the folder id, so a LOD
// manifest's relative tile paths resolve the same way in both folders.
func Sealed(key string) string {
	// A key with empty or dot segments is no key of the layout (Parse refuses it): it must never
	// be turned into one (i/I/u/O/../x would become i/I/u/O/sealed/x).
	k, ok := Parse(key)
	if !ok || IsServiceKind(k.Kind) {
		return key
	}
	k.Kind = SealedKindPrefix + k.Kind
	return k.String()
}

// WithSealed is keys, each followed by its sealed copy where it has one: what removing an upload
// (or a folder of uploads) must remove, whichever form a commit left.
func WithSealed(keys ...string) []string {
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k)
		if s := Sealed(k); s != k {
			out = append(out, s)
		}
	}
	return out
}

// IsServiceKind reports whether kind is a folder kind only the service writes.
func IsServiceKind(kind string) bool {
	return kind == KindClone || kind == KindRendition || strings.HasPrefix(kind, SealedKindPrefix)
}

// UploadPrefix is the upload folder (an upload ticket's prefix) a key of an upload folder or of
// its sealed copy belongs to; ok is false for the other kinds.
func UploadPrefix(key string) (prefix string, ok bool) {
	k, ok := Parse(key)
	if !ok || k.Kind == KindClone || k.Kind == KindRendition {
		return "", false
	}
	k.Kind = strings.TrimPrefix(k.Kind, SealedKindPrefix)
	if k.Kind == "" {
		return "", false
	}
	return k.Folder(), true
}

// KindAndID reads the folder kind of a key of the scene key space and the id after it
// (ticket, clone job or scene id); the bucket sweep classifies objects by them.
func KindAndID(key string) (kind, id string, ok bool) {
	k, ok := Parse(key)
	return k.Kind, k.ID, ok
}
