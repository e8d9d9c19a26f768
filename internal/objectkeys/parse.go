package objectkeys

import "strings"

// Key is an object key (or folder) of the scene key space, in its parts:
//
//	i/<Integration>/u/<Owner>/<Kind>/<ID>/<Rest>
//
// Kind is an upload kind, a sealed one (SealedKindPrefix + upload kind), KindClone or
// KindRendition; ID names the folder (the upload ticket's folder id, the clone's new scene, the scene);
// Rest is the path inside the folder: "" for the folder itself, ending in a slash for a folder
// below it. A clone's copy keeps the source's <kind>/<id>/<rest> as its Rest (Source).
type Key struct {
	Integration, Owner, Kind, ID, Rest string
}

// Parse reads a key or a folder (ending in a slash) of the layout into its parts. Anything else
// is refused: fewer than six segments, another first or third segment, or an empty, "." or ".."
// segment anywhere (only a folder's trailing slash leaves the last one empty). Every reader of a
// key that may come from a client, a row or a listing parses it here, so that the tenancy
// checks, the owner lookups and the sweep agree on which keys are keys.
func Parse(key string) (Key, bool) {
	segs := strings.Split(key, "/")
	if len(segs) < 7 || segs[0] != "i" || segs[2] != "u" {
		return Key{}, false
	}
	for i, s := range segs {
		if s == "." || s == ".." || (s == "" && i != len(segs)-1) {
			return Key{}, false
		}
	}
	return Key{Integration: segs[1], Owner: segs[3], Kind: segs[4], ID: segs[5], Rest: strings.Join(segs[6:], "/")}, true
}

// String is the key again (Parse(k.String()) gives k back).
func (k Key) String() string { return k.Folder() + k.Rest }

// Folder is the folder the key lies in (Folder of its first six segments): one upload's, one
// clone job's or one scene's renditions. Each belongs to one scene, so it is what an asset
// signature covers and what the owner lookup starts from.
func (k Key) Folder() string { return Folder(k.Integration, k.Owner, k.Kind, k.ID) }

// BelongsTo reports whether the key lies in the customer's own key space: the tenancy check of
// a parsed key (whole segments compared, so customer O never owns O2's keys).
func (k Key) BelongsTo(integrationID, ownerID string) bool {
	return k.Integration == integrationID && k.Owner == ownerID
}

// IsFolder reports whether k names a folder (its key ends in a slash) rather than an object.
func (k Key) IsFolder() bool { return k.Rest == "" || strings.HasSuffix(k.Rest, "/") }

// Path is the key below its customer's prefix: <kind>/<id>/<rest>.
func (k Key) Path() string { return k.Kind + "/" + k.ID + "/" + k.Rest }

// Source is the key a clone's copy was copied from, as far as the copy keeps it: for a key of a
// clone folder (clone/<job>/<kind>/<id>/<rest>) the copied key's Kind, ID and Rest under the same
// integration and customer; any other key is its own source. ok is false for a key of a clone
// folder that holds no <kind>/<id>/ of its own (the folder itself, or a stray object in it).
func (k Key) Source() (Key, bool) {
	if k.Kind != KindClone {
		return k, true
	}
	kind, rest, ok1 := strings.Cut(k.Rest, "/")
	id, rest, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		return Key{}, false
	}
	return Key{Integration: k.Integration, Owner: k.Owner, Kind: kind, ID: id, Rest: rest}, true
}
