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
}

// DeleteOrphanUploadsResult counts what the sweep removed; More says it stopped at MaxTickets
// with tickets left.
type DeleteOrphanUploadsResult struct {
	Tickets int
	Objects int
	More    bool
}
