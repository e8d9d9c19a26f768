package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

// LoadPurge reads a slice of a purge. The workflow fetches its work a slice at a time rather
// than taking it as input, so a customer with thousands of scenes never makes a workflow
// history or payload larger than Temporal accepts.
func (a *Activities) LoadPurge(ctx context.Context, in contract.LoadPurgeInput) (contract.LoadPurgeResult, error) {
	if in.PurgeID == "" || in.Offset < 0 || in.Limit <= 0 {
		return contract.LoadPurgeResult{}, badInput("LoadPurge: purge id, offset >= 0 and limit > 0 are required")
	}
	p, err := a.Ent.AssetPurge.Get(ctx, in.PurgeID)
	if ent.IsNotFound(err) {
		return contract.LoadPurgeResult{}, badInput("LoadPurge: no asset purge %s", in.PurgeID)
	}
	if err != nil {
		return contract.LoadPurgeResult{}, err
	}
	if p.DoneAt != nil {
		return contract.LoadPurgeResult{Closed: true}, nil
	}
	return slicePurge(p.Keys, p.Prefixes, in.Offset, in.Limit), nil
}

// slicePurge cuts [offset, offset+limit) out of keys followed by prefixes.
func slicePurge(keys, prefixes []string, offset, limit int) contract.LoadPurgeResult {
	total := len(keys) + len(prefixes)
	start := min(offset, total)
	end := min(start+limit, total)
	out := contract.LoadPurgeResult{Next: end, Last: end == total}
	if start < len(keys) {
		out.Keys = keys[start:min(end, len(keys))]
	}
	if end > max(start, len(keys)) {
		out.Prefixes = prefixes[max(start, len(keys))-len(keys) : end-len(keys)]
	}
	return out
}

// ClosePurge marks a purge done. Only the first close counts, so a re-run cannot rewrite the
// record of what the purge removed.
func (a *Activities) ClosePurge(ctx context.Context, in contract.ClosePurgeInput) (contract.ClosePurgeResult, error) {
	if in.PurgeID == "" {
		return contract.ClosePurgeResult{}, badInput("ClosePurge: purge id is required")
	}
	up := a.Ent.AssetPurge.Update().Where(assetpurge.ID(in.PurgeID), assetpurge.DoneAtIsNil()).
		SetDoneAt(time.Now()).SetDeletedObjects(in.Deleted)
	if in.Failure != "" {
		up.SetFailure(in.Failure)
	}
	n, err := up.Save(ctx)
	if err != nil {
		return contract.ClosePurgeResult{}, fmt.Errorf("closing asset purge %s: %w", in.PurgeID, err)
	}
	return contract.ClosePurgeResult{Closed: n == 1}, nil
}

// PendingPurges lists the outbox rows the re-drive must (re)start: the open rows older than
// MinAge offered least recently (never offered first, then oldest offer, then oldest row), at
// most Limit, and marks them offered. Oldest-first alone would let Limit rows whose purges run
// for long (each offer finds them running: a ClickHouse outage holds scene purges in
// DeleteViews) keep every later row, whose start a crash lost, from ever being re-driven; the
// rotation reaches every open row within ceil(open / Limit) runs. Rows another run is offering
// at the same moment are skipped, not waited for.
func (a *Activities) PendingPurges(ctx context.Context, in contract.PendingPurgesInput) (contract.PendingPurgesResult, error) {
	if in.Limit <= 0 || in.MinAge < 0 {
		return contract.PendingPurgesResult{}, badInput("PendingPurges: limit > 0 and min age >= 0 are required")
	}
	rows, err := a.Ent.QueryContext(ctx, `UPDATE asset_purges SET redriven_at = now() WHERE id IN (
		SELECT id FROM asset_purges WHERE done_at IS NULL AND created_at < $1
		ORDER BY redriven_at NULLS FIRST, created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING id, integration_id, owner_id, external_user_id, kind, coalesce(scene_id, '')`,
		time.Now().Add(-in.MinAge), in.Limit)
	if err != nil {
		return contract.PendingPurgesResult{}, err
	}
	defer rows.Close()
	var out contract.PendingPurgesResult
	for rows.Next() {
		var p contract.PendingPurge
		if err := rows.Scan(&p.PurgeID, &p.IntegrationID, &p.OwnerID, &p.ExternalUserID, &p.Kind, &p.SceneID); err != nil {
			return contract.PendingPurgesResult{}, err
		}
		out.Purges = append(out.Purges, p)
	}
	return out, rows.Err()
}

// ClaimUploads decides, at run time, which uploads of a refused commit may go. In one
// transaction, under the row locks of the outbox row and of each upload ticket: a ticket that
// has been committed since (a concurrent commit of the same upload won) is kept; the others are
// claimed — their rows deleted, so a commit still in flight finds no upload and cannot land a
// scene on objects about to go — and their objects become the row's keys and prefixes, minus any
// a scene of the owner names (the re-check does not trust the tickets alone). A re-run after the
// row was prepared changes nothing.
func (a *Activities) ClaimUploads(ctx context.Context, in contract.ClaimUploadsInput) (contract.ClaimUploadsResult, error) {
	if in.PurgeID == "" {
		return contract.ClaimUploadsResult{}, badInput("ClaimUploads: purge id is required")
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.ClaimUploadsResult{}, err
	}
	defer func() { _ = tx.Rollback() }()
	p, err := tx.AssetPurge.Query().Where(assetpurge.ID(in.PurgeID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		return contract.ClaimUploadsResult{}, badInput("ClaimUploads: no asset purge %s", in.PurgeID)
	}
	if err != nil {
		return contract.ClaimUploadsResult{}, err
	}
	switch {
	case p.DoneAt != nil:
		return contract.ClaimUploadsResult{Closed: true}, nil
	case p.PreparedAt != nil:
		return contract.ClaimUploadsResult{}, nil
	case p.Kind != assetpurge.KindUpload:
		return contract.ClaimUploadsResult{}, badInput("ClaimUploads: asset purge %s is a %s purge", in.PurgeID, p.Kind)
	}
	var out contract.ClaimUploadsResult
	// A released or unused upload goes with its sealed copy (objectkeys.Sealed).
	keys, prefixes := objectkeys.WithSealed(p.Keys...), slices.Clone(p.Prefixes)
	var claimed []string
	if len(p.TicketIds) > 0 {
		tickets, err := tx.UploadTicket.Query().Where(uploadticket.IDIn(p.TicketIds...)).ForUpdate().All(ctx)
		if err != nil {
			return out, err
		}
		for _, t := range tickets {
			if t.CommittedAt != nil || t.IntegrationID != p.IntegrationID || t.OwnerID != p.OwnerID {
				out.Kept++
				continue
			}
			k, pre, ok := ticketObjects(t)
			if !ok {
				a.Log.Warn("upload purge: ticket prefix outside the scene key space; deleting the row only", "ticket", t.ID, "prefix", t.Prefix)
			}
			if len(pre) > 0 {
				// A LOD folder goes as its prefix; listing its 20 000 keys as well adds nothing.
				k = nil
			}
			keys, prefixes, claimed = append(keys, k...), append(prefixes, pre...), append(claimed, t.ID)
		}
	}
	keys, prefixes, err = unreferenced(ctx, tx, p.OwnerID, keys, prefixes)
	if err != nil {
		return out, err
	}
	if len(claimed) > 0 {
		if _, err := tx.UploadTicket.Delete().Where(uploadticket.IDIn(claimed...), uploadticket.CommittedAtIsNil()).Exec(ctx); err != nil {
			return out, err
		}
	}
	if err := p.Update().SetKeys(keys).SetPrefixes(prefixes).SetPreparedAt(time.Now()).Exec(ctx); err != nil {
		return out, err
	}
	if err := tx.Commit(); err != nil {
		return out, err
	}
	out.Claimed = len(claimed)
	return out, nil
}

// unreferenced drops the keys and prefixes a scene of ownerID names (its asset keys or its LOD
// folder). Only the owner's scenes are read: a commit takes uploads only from the caller's own
// prefix, so no other customer's scene can name them, and the owner index keeps this cheap.
func unreferenced(ctx context.Context, tx *ent.Tx, ownerID string, keys, prefixes []string) ([]string, []string, error) {
	if len(keys)+len(prefixes) == 0 {
		return keys, prefixes, nil
	}
	scenes, err := tx.Scene.Query().Where(scene.OwnerID(ownerID)).
		Select(scene.FieldAssetKeys, scene.FieldLodFolderKey).All(ctx)
	if err != nil {
		return nil, nil, err
	}
	named := map[string]bool{}
	var folders []string
	for _, sc := range scenes {
		for _, k := range objectkeys.WithSealed(sc.AssetKeys...) {
			named[k] = true
		}
		if sc.LodFolderKey != nil {
			folders = append(folders, objectkeys.WithSealed(strings.TrimSuffix(*sc.LodFolderKey, "/")+"/")...)
		}
	}
	inFolder := func(k string) bool {
		return slices.ContainsFunc(folders, func(f string) bool { return strings.HasPrefix(k, f) })
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return named[k] || inFolder(k) })
	prefixes = slices.DeleteFunc(prefixes, func(p string) bool {
		// A prefix holding a named key, or inside or around a named folder, stays.
		for k := range named {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return inFolder(p) || slices.ContainsFunc(folders, func(f string) bool { return strings.HasPrefix(f, p) })
	})
	return keys, prefixes, nil
}
