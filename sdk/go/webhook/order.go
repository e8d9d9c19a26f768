package webhook

import (
	"errors"
	"sync"
)

// ErrNoResource is returned for an event whose data names no resource (an unknown type, or
// data without its id).
var ErrNoResource = errors.New("webhook: the event names no resource")

// Resource names the resource whose changes an event's Sequence orders:
//
//   - "splat/<id>" for splat.created, updated, published, ready and deleted, the retention
//     events, and clone.succeeded (the copy it made: it follows the copy's splat.created);
//   - "cloneJob/<jobId>" for clone.failed (no scene is left to order it by);
//   - "externalUser/<id>" for externalUser.deleted.
func (e *Event) Resource() (string, error) {
	var id struct {
		Splat struct {
			ID string `json:"id"`
		} `json:"splat"`
		SplatID        string `json:"splatId"`
		JobID          string `json:"jobId"`
		ExternalUserID string `json:"externalUserId"`
	}
	if err := decodeInto(e, &id); err != nil {
		return "", err
	}
	var kind, key string
	switch e.Type {
	case SplatCreated, SplatUpdated, SplatPublished, SplatReady:
		kind, key = "splat/", id.Splat.ID
	case SplatDeleted, RetentionArchived, RetentionRestored, RetentionPurged, CloneSucceeded:
		kind, key = "splat/", id.SplatID
	case CloneFailed:
		kind, key = "cloneJob/", id.JobID
	case ExternalUserDeleted:
		kind, key = "externalUser/", id.ExternalUserID
	}
	if key == "" {
		return "", ErrNoResource
	}
	return kind + key, nil
}

// Latest applies the ordering rule of a receiver: per resource, keep the highest sequence seen
// and ignore an event whose sequence is not higher (it is older than, or the same as, what was
// applied). A deletion counts too: remember its sequence, so a creation or update that arrives
// after it is ignored instead of bringing the scene back.
//
// Latest keeps its numbers in memory, which suits one process and a test. A receiver with a
// database stores the number with its record of the resource and applies an event in one
// conditional write (UPDATE … SET …, sequence = $n WHERE id = $id AND sequence < $n), keeping a
// row, a tombstone, for a deleted resource. The zero value is ready to use and safe for
// concurrent use.
type Latest struct {
	mu   sync.Mutex
	seen map[string]int64
}

// Apply reports whether e is newer than every event of its resource applied before, and if so
// remembers its sequence: the caller applies e's state then, and skips e otherwise. An event
// without a sequence counts as 0, older than any that has one.
func (l *Latest) Apply(e *Event) (bool, error) {
	r, err := e.Resource()
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.seen[r]; ok && e.Sequence <= last {
		return false, nil
	}
	if l.seen == nil {
		l.seen = map[string]int64{}
	}
	l.seen[r] = e.Sequence
	return true, nil
}
