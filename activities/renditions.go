package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/workflows/contract"
)

// Renditions (contract item 15): the media worker turns a committed .ply, .splat or .ksplat
// scene into SOG (Streamed SOG with levels of detail from RenditionSettings.LODMin Gaussians)
// and, when the scene has no image, renders a poster. Everything lands in the scene's own
// rendition folder (RenditionFolder), which the scene's delete and purges remove whole; the
// bytes are never charged (fileSizeBytes is the upload's).

// RenditionSettings are the media worker's conversion settings.
type RenditionSettings struct {
	// Transform runs splat-transform with the deployment's bounds.
	Transform media.Transform
	// LODMin is the Gaussian count from which a rendition is a Streamed SOG.
	LODMin int
	// WorkDir holds each conversion's scratch folder (the OS temp dir when empty).
	WorkDir string
	// Lanes picks a conversion's lane by its upload's size.
	Lanes contract.Lanes
	// slots bound the conversions running at once in this process, per lane: a small scene
	// waits only for other small ones, never for a large scan's conversion.
	slots map[contract.Lane]chan struct{}
}

// NewRenditionSettings returns the settings of a media worker that runs at most large
// conversions of the large lane and small of the small lane at once.
func NewRenditionSettings(t media.Transform, lodMin int, workDir string, lanes contract.Lanes, large, small int) *RenditionSettings {
	return &RenditionSettings{Transform: t, LODMin: lodMin, WorkDir: workDir, Lanes: lanes, slots: map[contract.Lane]chan struct{}{
		contract.LaneLarge: make(chan struct{}, max(1, large)), contract.LaneSmall: make(chan struct{}, max(1, small))}}
}

// acquire waits for a conversion slot of lane (or ctx); the returned func gives it back.
func (s *RenditionSettings) acquire(ctx context.Context, lane contract.Lane) (func(), error) {
	slots := s.slots[lane]
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PrepareRendition reads the scene a rendition is for.
func (a *Activities) PrepareRendition(ctx context.Context, in contract.PrepareRenditionInput) (contract.PrepareRenditionResult, error) {
	if in.SceneID == "" {
		return contract.PrepareRenditionResult{}, badInput("rendition input without a scene")
	}
	sc, err := a.Ent.Scene.Get(ctx, in.SceneID)
	if ent.IsNotFound(err) {
		return contract.PrepareRenditionResult{Skip: true, Reason: "the scene was deleted"}, nil
	}
	if err != nil {
		return contract.PrepareRenditionResult{}, err
	}
	if sc.ProcessingState != scene.ProcessingStatePending {
		return contract.PrepareRenditionResult{Skip: true, Reason: "the scene's rendition is " + string(sc.ProcessingState)}, nil
	}
	format, ok := contract.RenditionFormat(string(sc.SplatType), sc.SplatURL)
	posterOnly := false
	if !ok {
		// A .sog or a LOD folder gets a poster alone, while it has no image (an image the
		// editor saved since the commit wins).
		format, posterOnly = contract.PosterFormat(string(sc.SplatType), sc.SplatURL)
		ok = posterOnly && sc.ImageURL == ""
	}
	key, inStore := strings.CutPrefix(sc.SplatURL, a.AssetBase+"/")
	if !ok || !inStore || !objectkeys.SafeKey(key) || sc.RenditionPrefix == nil || !objectkeys.SafePrefix(*sc.RenditionPrefix) {
		// Recorded, so the scene leaves the dispatcher's outbox: left pending, it would be
		// started again every few minutes and hold a place of the window each time.
		reason := "the scene's upload has no rendition"
		if posterOnly {
			reason = "the scene's upload is already compact, and it has an image"
		}
		return contract.PrepareRenditionResult{Skip: true, Reason: reason}, a.recordSkipped(ctx, sc, reason)
	}
	// The committed copy (objectkeys.Sealed), not the upload: a PUT after the commit must not
	// reach the rendition either.
	out := contract.PrepareRenditionResult{RenditionSource: contract.RenditionSource{SourceKey: objectkeys.Sealed(key), Format: format, Folder: *sc.RenditionPrefix,
		SourceBytes: sc.FileSizeBytes, Poster: sc.ImageURL == "", PosterOnly: posterOnly}}
	out.Orientation, out.Camera, out.Background = levelView(sc.LevelData)
	return out, nil
}

// recordSkipped marks a still pending scene skipped with reason (updated_at kept: not an edit).
func (a *Activities) recordSkipped(ctx context.Context, sc *ent.Scene, reason string) error {
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	n, err := tx.Scene.Update().Where(scene.ID(sc.ID), scene.ProcessingStateEQ(scene.ProcessingStatePending)).
		SetUpdatedAt(sc.UpdatedAt).SetProcessingState(scene.ProcessingStateSkipped).SetProcessingMessage(reason).Save(ctx)
	if err != nil || n == 0 {
		return err
	}
	if err := db.NotifyScenesChanged(ctx, tx, sc.IntegrationID, sc.ID); err != nil {
		return err
	}
	return tx.Commit()
}

// levelView reads the poster's view from a levelData the scene service validated (contract
// item 11): orientation.rotation, camera {position, target, fov} and background.color.
func levelView(ld map[string]any) (orient *[3]float64, cam *contract.Camera, bg *[3]uint8) {
	vec := func(v any) (out [3]float64, ok bool) {
		a, _ := v.([]any)
		if len(a) != 3 {
			return out, false
		}
		for i, x := range a {
			f, isNum := x.(float64)
			if !isNum {
				return out, false
			}
			out[i] = f
		}
		return out, true
	}
	if o, _ := ld["orientation"].(map[string]any); o != nil {
		if r, ok := vec(o["rotation"]); ok {
			orient = &r
		}
	}
	if c, _ := ld["camera"].(map[string]any); c != nil {
		p, ok1 := vec(c["position"])
		t, ok2 := vec(c["target"])
		if ok1 && ok2 {
			cam = &contract.Camera{Position: p, Target: t}
			if f, ok := c["fov"].(float64); ok {
				cam.FOV = f
			}
		}
	}
	if b, _ := ld["background"].(map[string]any); b != nil {
		if s, _ := b["color"].(string); len(s) == 7 && s[0] == '#' {
			var rgb [3]uint8
			if _, err := fmt.Sscanf(s[1:], "%02x%02x%02x", &rgb[0], &rgb[1], &rgb[2]); err == nil {
				bg = &rgb
			}
		}
	}
	return orient, cam, bg
}

// FinishRendition records the outcome on the scene, under its row lock: a concurrent DELETE
// either comes first (the scene is gone and the objects just written are removed here) or
// after (its purge names the folder). The poster becomes the image only while the scene still
// has none, so an image the editor saved in the meantime wins. updated_at is kept: a rendition
// is not an edit, and lists sorted by it must not reorder when one lands.
func (a *Activities) FinishRendition(ctx context.Context, in contract.FinishRenditionInput) (contract.FinishRenditionResult, error) {
	if in.SceneID == "" || !objectkeys.SafePrefix(in.Folder) || (in.State != "ready" && in.State != "failed" && in.State != "skipped") ||
		(in.State != "failed" && in.Result == nil) {
		return contract.FinishRenditionResult{}, badInput("incomplete rendition outcome for scene %q", in.SceneID)
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return contract.FinishRenditionResult{}, err
	}
	defer func() { _ = tx.Rollback() }()
	sc, err := tx.Scene.Query().Where(scene.ID(in.SceneID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) || (err == nil && (sc.RenditionPrefix == nil || *sc.RenditionPrefix != in.Folder)) {
		_ = tx.Rollback()
		n := 0
		err := a.bucket().EmptyPrefix(ctx, in.Folder, func(k int) { n += k })
		return contract.FinishRenditionResult{Removed: n}, err
	}
	if err != nil {
		return contract.FinishRenditionResult{}, err
	}
	up := tx.Scene.UpdateOne(sc).SetUpdatedAt(sc.UpdatedAt)
	switch in.State {
	case "failed":
		up.SetProcessingState(scene.ProcessingStateFailed).SetProcessingMessage(trimMessage(in.Message)).
			ClearRenditionType().ClearRenditionKey().ClearRenditionBytes().ClearRenditionFiles()
	case "skipped":
		// A poster alone (a .sog or a LOD folder): no rendition, the scene serves its upload.
		up.SetProcessingState(scene.ProcessingStateSkipped).
			ClearRenditionType().ClearRenditionKey().ClearRenditionBytes().ClearRenditionFiles()
		if in.Message != "" {
			up.SetProcessingMessage(trimMessage(in.Message))
		} else {
			up.ClearProcessingMessage()
		}
		if r := in.Result; r.PosterKey != "" && sc.ImageURL == "" {
			up.SetImageURL(a.AssetBase + "/" + r.PosterKey)
		}
	default:
		r := in.Result
		up.SetProcessingState(scene.ProcessingStateReady).ClearProcessingMessage().
			SetRenditionType(scene.RenditionType(r.Type)).SetRenditionKey(r.Key).SetRenditionBytes(r.Bytes).
			SetRenditionFiles(r.Files).SetGaussians(r.Gaussians)
		if r.PosterKey != "" && sc.ImageURL == "" {
			up.SetImageURL(a.AssetBase + "/" + r.PosterKey)
		}
	}
	if sc, err = up.Save(ctx); err != nil {
		return contract.FinishRenditionResult{}, err
	}
	if err := db.NotifyScenesChanged(ctx, tx, sc.IntegrationID, sc.ID); err != nil {
		return contract.FinishRenditionResult{}, err
	}
	// splat.ready says processing has finished (contract item 15); the item's processing.state
	// tells a ready rendition from a failed one, whose scene keeps serving its upload, and from
	// a poster alone (skipped, its imageUrl set).
	var hooks events.Batch
	if err := a.Events.EmitSplat(ctx, tx, &hooks, events.SplatReady, sc, ""); err != nil {
		return contract.FinishRenditionResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return contract.FinishRenditionResult{}, err
	}
	a.Events.Flush(ctx, &hooks)
	return contract.FinishRenditionResult{Recorded: true}, nil
}

// maxMessage is the processing_message column's bound: ent's MaxLen counts bytes.
const maxMessage = 500

// trimMessage bounds a failure message to the column, cut on a rune boundary: a message over
// the bound would fail the row's validation, and the recording activity would retry for ever.
func trimMessage(s string) string {
	if s == "" {
		s = "the rendition failed"
	}
	if len(s) <= maxMessage {
		return s
	}
	const ellipsis = "…"
	cut := maxMessage - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// PendingRenditions lists the scenes whose rendition is still pending after MinAge: the outbox
// the rendition re-drive works from. It takes those started or offered least recently (never
// first, then the oldest start, then the oldest scene), at most Limit, and marks them started
// (rendition_started_at, which the dispatcher reads too), FOR UPDATE SKIP LOCKED. Oldest-first
// alone let Limit scenes whose conversions run long (each offer finds them running) keep a
// later scene, whose start was lost, from ever being re-driven; the rotation reaches every
// pending scene within ceil(pending / Limit) runs, as PendingPurges does for purges.
func (a *Activities) PendingRenditions(ctx context.Context, in contract.PendingRenditionsInput) (contract.PendingRenditionsResult, error) {
	if in.Limit <= 0 || in.MinAge < 0 {
		return contract.PendingRenditionsResult{}, badInput("PendingRenditions: limit > 0 and min age >= 0 are required")
	}
	rows, err := a.Ent.QueryContext(ctx, `UPDATE scenes s SET rendition_started_at = now() WHERE s.id IN (
			SELECT id FROM scenes WHERE processing_state = 'pending' AND updated_at < $1
			ORDER BY rendition_started_at NULLS FIRST, updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING s.id, s.integration_id,
			coalesce((SELECT eu.external_user_id FROM external_users eu WHERE eu.id = s.owner_id), '')`,
		time.Now().Add(-in.MinAge), in.Limit)
	if err != nil {
		return contract.PendingRenditionsResult{}, err
	}
	defer rows.Close()
	var out contract.PendingRenditionsResult
	for rows.Next() {
		var p contract.PendingRendition
		if err := rows.Scan(&p.SceneID, &p.IntegrationID, &p.ExternalUserID); err != nil {
			return contract.PendingRenditionsResult{}, err
		}
		out.Scenes = append(out.Scenes, p)
	}
	return out, rows.Err()
}

// renditionFailure turns a conversion error into the rendition's message and whether it is
// the input's fault (never retried) rather than the infrastructure's.
func renditionFailure(err error) (string, bool) {
	var re *media.RunError
	if errors.As(err, &re) {
		return re.Detail, true
	}
	var pe *media.InputError
	if errors.As(err, &pe) {
		return pe.Error(), true
	}
	return err.Error(), false
}
