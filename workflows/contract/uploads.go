package contract

import (
	"time"
)

// DeleteOrphanUploadsInput bounds one sweep: tickets never committed whose upload window closed
// more than MinAge ago, BatchSize at a time, at most MaxTickets in this call.
type DeleteOrphanUploadsInput struct {
	MinAge     time.Duration
	BatchSize  int
	MaxTickets int
	// MultipartIdle, when positive, also removes multipart uploads neither completed nor
	// committed whose parts stopped arriving: no part stored for MultipartIdle (counted from
	// the upload's start while it holds none), whatever their expiresAt.
	MultipartIdle time.Duration `json:",omitempty"`
}

// DeleteOrphanUploadsResult counts what the sweep removed; More says it stopped at MaxTickets
// with tickets left.
type DeleteOrphanUploadsResult struct {
	Tickets int
	Objects int
	More    bool
}

// DeleteStrayObjectsInput bounds one call of the bucket sweep: it lists the scene key space from
// after After (empty: from the start), at most Pages listing pages, and removes the objects that
// belong to no scene and no open upload ticket once they are older than MinAge.
type DeleteStrayObjectsInput struct {
	After  string
	Pages  int
	MinAge time.Duration
}

// DeleteStrayObjectsResult counts the objects the call listed and removed; Next is where the
// next call starts, empty when the listing reached the end of the bucket.
type DeleteStrayObjectsResult struct {
	Listed  int
	Deleted int
	Next    string
}
