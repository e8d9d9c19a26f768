package contract

import (
	"time"
)

// MaxViewDeletion bounds the scene ids of one DeleteViews call: one ALTER … DELETE statement
// of about 27 bytes an id stays well under ClickHouse's default max_query_size (256 KiB).
const MaxViewDeletion = 5000

// DeleteViewsInput names the scenes whose view records go.
type DeleteViewsInput struct {
	SceneIDs []string
}

// DeleteViewsResult is empty: the deletion either happened or the activity is retried.
type DeleteViewsResult struct{}

// DropExpiredViewsInput is the retention cutoff: every monthly partition wholly before it goes.
type DropExpiredViewsInput struct {
	Before time.Time
}

// DropExpiredViewsResult lists the dropped partitions ("table:YYYYMM").
type DropExpiredViewsResult struct {
	Dropped []string
}

// DeleteOrphanViewsInput is empty: the sweep finds its own work.
type DeleteOrphanViewsInput struct{}

// DeleteOrphanViewsResult counts the scenes whose records it removed.
type DeleteOrphanViewsResult struct {
	Scenes int
}
