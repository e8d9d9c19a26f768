package contract

import (
	"time"
)

// MaxViewDeletion bounds the scene ids of one DeleteViews call: its Postgres deletions and its
// one insert into ClickHouse's deleted scenes stay small.
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

// CompactDeletedViewsInput is empty: the compaction finds its own work.
type CompactDeletedViewsInput struct{}

// CompactDeletedViewsResult counts the deleted scenes whose rows the compaction removed.
type CompactDeletedViewsResult struct {
	Scenes int
}
