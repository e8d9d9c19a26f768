package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
)

// LoadPurgeInput asks for the objects of an outbox row (asset_purges) from Offset on: its keys
// first, then its prefixes, counted as one list.
type LoadPurgeInput struct {
	PurgeID string
	Offset  int
	Limit   int
}

// LoadPurgeResult is one slice of a purge. Next is the offset of the following slice; Last says
// there is none. Closed says the row is already done (another run finished it), and nothing
// else is set then.
type LoadPurgeResult struct {
	Keys     []string
	Prefixes []string
	Next     int
	Last     bool
	Closed   bool
}

// LoadPurge reads a slice of a purge. The workflow fetches its work a slice at a time rather
// than taking it as input, so a customer with thousands of scenes never makes a workflow
// history or payload larger than Temporal accepts.
func (a *Activities) LoadPurge(ctx context.Context, in LoadPurgeInput) (LoadPurgeResult, error) {
	if in.PurgeID == "" || in.Offset < 0 || in.Limit <= 0 {
		return LoadPurgeResult{}, badInput("LoadPurge: purge id, offset >= 0 and limit > 0 are required")
	}
	p, err := a.Ent.AssetPurge.Get(ctx, in.PurgeID)
	if ent.IsNotFound(err) {
		return LoadPurgeResult{}, badInput("LoadPurge: no asset purge %s", in.PurgeID)
	}
	if err != nil {
		return LoadPurgeResult{}, err
	}
	if p.DoneAt != nil {
		return LoadPurgeResult{Closed: true}, nil
	}
	return slicePurge(p.Keys, p.Prefixes, in.Offset, in.Limit), nil
}

// slicePurge cuts [offset, offset+limit) out of keys followed by prefixes.
func slicePurge(keys, prefixes []string, offset, limit int) LoadPurgeResult {
	total := len(keys) + len(prefixes)
	start := min(offset, total)
	end := min(start+limit, total)
	out := LoadPurgeResult{Next: end, Last: end == total}
	if start < len(keys) {
		out.Keys = keys[start:min(end, len(keys))]
	}
	if end > max(start, len(keys)) {
		out.Prefixes = prefixes[max(start, len(keys))-len(keys) : end-len(keys)]
	}
	return out
}

// ClosePurgeInput closes an outbox row: Deleted objects removed, or Failure when the purge
// gave up on input it can never process.
type ClosePurgeInput struct {
	PurgeID string
	Deleted int
	Failure string
}

// ClosePurgeResult says whether this call closed the row (false: it was already closed).
type ClosePurgeResult struct {
	Closed bool
}

// ClosePurge marks a purge done. Only the first close counts, so a re-run cannot rewrite the
// record of what the purge removed.
func (a *Activities) ClosePurge(ctx context.Context, in ClosePurgeInput) (ClosePurgeResult, error) {
	if in.PurgeID == "" {
		return ClosePurgeResult{}, badInput("ClosePurge: purge id is required")
	}
	up := a.Ent.AssetPurge.Update().Where(assetpurge.ID(in.PurgeID), assetpurge.DoneAtIsNil()).
		SetDoneAt(time.Now()).SetDeletedObjects(in.Deleted)
	if in.Failure != "" {
		up.SetFailure(in.Failure)
	}
	n, err := up.Save(ctx)
	if err != nil {
		return ClosePurgeResult{}, fmt.Errorf("closing asset purge %s: %w", in.PurgeID, err)
	}
	return ClosePurgeResult{Closed: n == 1}, nil
}

// PendingPurgesInput asks for open outbox rows created more than MinAge ago (younger rows are
// still being started by the service that wrote them), oldest first, at most Limit.
type PendingPurgesInput struct {
	MinAge time.Duration
	Limit  int
}

// PendingPurge names one open outbox row and the customer it purges.
type PendingPurge struct {
	PurgeID              string
	IntegrationID        string
	ExternalUserRecordID string
	ExternalUserID       string
}

// PendingPurgesResult lists open rows.
type PendingPurgesResult struct {
	Purges []PendingPurge
}

// PendingPurges lists the outbox rows the re-drive must (re)start.
func (a *Activities) PendingPurges(ctx context.Context, in PendingPurgesInput) (PendingPurgesResult, error) {
	if in.Limit <= 0 || in.MinAge < 0 {
		return PendingPurgesResult{}, badInput("PendingPurges: limit > 0 and min age >= 0 are required")
	}
	rows, err := a.Ent.AssetPurge.Query().
		Where(assetpurge.DoneAtIsNil(), assetpurge.CreatedAtLT(time.Now().Add(-in.MinAge))).
		Order(ent.Asc(assetpurge.FieldCreatedAt)).Limit(in.Limit).
		Select(assetpurge.FieldID, assetpurge.FieldIntegrationID, assetpurge.FieldExternalUserRecordID, assetpurge.FieldExternalUserID).
		All(ctx)
	if err != nil {
		return PendingPurgesResult{}, err
	}
	out := PendingPurgesResult{Purges: make([]PendingPurge, len(rows))}
	for i, r := range rows {
		out.Purges[i] = PendingPurge{PurgeID: r.ID, IntegrationID: r.IntegrationID,
			ExternalUserRecordID: r.ExternalUserRecordID, ExternalUserID: r.ExternalUserID}
	}
	return out, nil
}
