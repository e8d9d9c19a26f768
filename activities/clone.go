package activities

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"go.temporal.io/sdk/activity"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/metrics"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
)

// Clone limits.
const (
	// copySuffix marks a Duplicate's title (spec: title + ' (Copy)'); the title is shortened
	// first when the result would exceed the 200-character title limit.
	copySuffix = " (Copy)"
	maxTitle   = 200
	// maxLevelDataAssets bounds the assets a levelData may reference for copying, so one scene
	// cannot turn a clone into an unbounded job plan.
	maxLevelDataAssets = 1000
)

// ClonePrefix is where every object of one clone lives: under the cloning customer's key space
// (so the customer deletion purges it too), in a folder of its own named by the job — the id
// the new scene gets — so a rollback removes exactly what the job copied by emptying it.
func ClonePrefix(integrationID, ownerRecordID, jobID string) string {
	return objectkeys.Folder(integrationID, ownerRecordID, objectkeys.KindClone, jobID)
}

// cloneKey maps a source object key to its copy under dst (a ClonePrefix). Keys of the scene key
// space look like i/<integration>/u/<customer>/<kind>/<ticket>/<rest>; the copy keeps
// <kind>/<ticket>/<rest>, which is unique within one scene, so the file, a LOD folder and the
// images of one scene never collide. A clone's own keys (…/clone/<job>/<kind>/<ticket>/<rest>)
// map the same way, so clones of clones do not grow their keys. A prefix (ending in a slash)
// maps to a prefix.
func cloneKey(src, integrationID, dst string) (string, bool) {
	parts := strings.Split(src, "/")
	if len(parts) < 7 || parts[0] != "i" || parts[1] != integrationID || parts[2] != "u" || parts[3] == "" {
		return "", false
	}
	rel := parts[4:]
	if rel[0] == "clone" {
		rel = rel[2:]
	}
	if len(rel) < 3 {
		return "", false
	}
	for i, s := range rel {
		// Only the last segment of a prefix may be empty (its trailing slash).
		if s == "." || s == ".." || (s == "" && i != len(rel)-1) {
			return "", false
		}
	}
	return dst + strings.Join(rel, "/"), true
}

// CloneSourceOf applies the spec's rules for the scene a customer asks to clone: a live scene of
// the caller's integration (anything else is 404, never telling whether it exists); the
// customer's own scene is a Duplicate; another owner's public scene with allowClone true is a
// Remix; any other scene of another owner is 403. The owner edge is loaded (the remix names
// its owner). The scene API checks this before it starts a job, and the job checks it again
// when it reserves, since the source may change in between.
func CloneSourceOf(ctx context.Context, c *ent.Client, integrationID, ownerRecordID, sceneID string) (src *ent.Scene, remix bool, err error) {
	src, err = c.Scene.Query().Where(scene.ID(sceneID), scene.IntegrationID(integrationID), scene.ArchivedAtIsNil()).
		WithOwner().Only(ctx)
	if ent.IsNotFound(err) {
		return nil, false, apperr.NotFound("splat not found")
	}
	if err != nil {
		return nil, false, err
	}
	switch {
	case src.OwnerID == ownerRecordID:
		return src, false, nil
	case src.Visibility == scene.VisibilityPublic && src.AllowClone:
		return src, true, nil
	default:
		return nil, false, apperr.Forbidden("the owner does not allow this scene to be cloned")
	}
}

// sourceFilesMissing is the spec's 409 for a source whose stored files are gone.
func sourceFilesMissing(detail string) error {
	return apperr.Conflict("source files missing from storage: "+detail).With("code", "SOURCE_FILES_MISSING")
}

// PrepareCloneInput names one clone job: JobID is the id the new scene will get.
type PrepareCloneInput struct {
	JobID         string
	SourceSceneID string
	IntegrationID string
	AccountID     string
	OwnerRecordID string
	// ClonedAt is when the clone was asked for (the remix's clonedAt).
	ClonedAt time.Time
}

// PrepareCloneResult is the job's plan and what it reserved.
type PrepareCloneResult struct {
	Bytes        int64
	TotalObjects int
	Plan         schema.ClonePlan
}

// PrepareClone checks the source again, plans the copy (every object of the scene: the file or
// the LOD folder, the images, and the assets levelData references, with levelData rewritten to
// the copies), verifies every source object is in the store (409 SOURCE_FILES_MISSING
// otherwise), and reserves the bytes from the customer and the account (413 otherwise) in one
// transaction with the job's row. A retry finds the row and answers from it, so the storage is
// reserved once.
func (a *Activities) PrepareClone(ctx context.Context, in PrepareCloneInput) (PrepareCloneResult, error) {
	if in.JobID == "" || in.SourceSceneID == "" || in.IntegrationID == "" || in.AccountID == "" || in.OwnerRecordID == "" {
		return PrepareCloneResult{}, badInput("PrepareClone: job, source, integration, account and owner are required")
	}
	if job, err := a.Ent.CloneJob.Get(ctx, in.JobID); err == nil {
		return PrepareCloneResult{Bytes: job.Bytes, TotalObjects: job.TotalObjects, Plan: *job.Plan}, nil
	} else if !ent.IsNotFound(err) {
		return PrepareCloneResult{}, err
	}
	src, remix, err := CloneSourceOf(ctx, a.Ent, in.IntegrationID, in.OwnerRecordID, in.SourceSceneID)
	if err != nil {
		return PrepareCloneResult{}, clientErrorOr(err)
	}
	draft, plan, err := a.planClone(src, remix, in)
	if err != nil {
		return PrepareCloneResult{}, clientErrorOr(err)
	}
	bytes, total, err := a.measure(ctx, src, &plan)
	if err != nil {
		return PrepareCloneResult{}, clientErrorOr(err)
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return PrepareCloneResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	// Lock order: customer, then account (quota.Reserve), as every writer of the counters.
	if _, _, err := quota.Reserve(ctx, tx, in.OwnerRecordID, in.AccountID, quota.Charge{Bytes: bytes}); err != nil {
		return PrepareCloneResult{}, clientErrorOr(err)
	}
	err = tx.CloneJob.Create().SetID(in.JobID).SetIntegrationID(in.IntegrationID).SetOwnerID(in.OwnerRecordID).
		SetAccountID(in.AccountID).SetSourceSceneID(src.ID).SetBytes(bytes).SetTotalObjects(total).
		SetDraft(draft).SetPlan(&plan).Exec(ctx)
	if err != nil {
		return PrepareCloneResult{}, fmt.Errorf("recording clone job %s: %w", in.JobID, err)
	}
	if err := tx.Commit(); err != nil {
		return PrepareCloneResult{}, fmt.Errorf("committing clone job %s: %w", in.JobID, err)
	}
	return PrepareCloneResult{Bytes: bytes, TotalObjects: total, Plan: plan}, nil
}

// planClone builds the new scene's draft and the copy plan from the source row.
func (a *Activities) planClone(src *ent.Scene, remix bool, in PrepareCloneInput) (*schema.CloneDraft, schema.ClonePlan, error) {
	dst := ClonePrefix(in.IntegrationID, in.OwnerRecordID, in.JobID)
	var plan schema.ClonePlan
	mapped := map[string]string{} // source key → copy key, for URL rewriting
	add := func(key string) (string, error) {
		if d, ok := mapped[key]; ok {
			return d, nil
		}
		d, ok := cloneKey(key, in.IntegrationID, dst)
		if !ok {
			return "", fmt.Errorf("scene %s: asset key %q is outside the scene key space", src.ID, key)
		}
		mapped[key] = d
		plan.Objects = append(plan.Objects, schema.ObjectCopy{Src: key, Dst: d})
		return d, nil
	}
	draft := &schema.CloneDraft{
		Title: src.Title, Description: src.Description, SplatType: string(src.SplatType),
		InitialCameraPosition: src.InitialCameraPosition, InitialCameraRotation: src.InitialCameraRotation,
		AllowEmbed: src.AllowEmbed, AllowComments: src.AllowComments, AllowReactions: src.AllowReactions,
	}
	if remix {
		owner := ""
		if u := src.Edges.Owner; u != nil {
			owner = u.ExternalUserID
			if u.DisplayName != nil && *u.DisplayName != "" {
				owner = *u.DisplayName
			}
		}
		draft.RemixedFrom = &schema.RemixedFrom{SplatID: src.ID, OwnerName: owner, ClonedAt: httpx.ISOTime(in.ClonedAt)}
	} else {
		draft.Title = copyTitle(src.Title)
	}
	for _, k := range src.AssetKeys {
		d, err := add(k)
		if err != nil {
			return nil, plan, err
		}
		draft.AssetKeys = append(draft.AssetKeys, d)
	}
	if src.LodFolderKey != nil {
		folder := strings.TrimSuffix(*src.LodFolderKey, "/") + "/"
		d, ok := cloneKey(folder, in.IntegrationID, dst)
		if !ok {
			return nil, plan, fmt.Errorf("scene %s: LOD folder %q is outside the scene key space", src.ID, folder)
		}
		plan.FolderSrc, plan.FolderDst = folder, d
		lod := strings.TrimSuffix(d, "/")
		draft.LodFolderKey, draft.LodFiles = &lod, src.LodFiles
	}
	// Every URL of the record that points at a copied object (or into the copied folder) now
	// points at the copy; anything else (an external URL) is kept as it is.
	rewrite := func(u string) string {
		key, render, ok := a.assetRef(u)
		if !ok {
			return u
		}
		if d, ok := mapped[key]; ok {
			return render(d)
		}
		if plan.FolderSrc != "" && strings.HasPrefix(key, plan.FolderSrc) {
			return render(plan.FolderDst + strings.TrimPrefix(key, plan.FolderSrc))
		}
		return u
	}
	draft.SplatURL = rewrite(src.SplatURL)
	draft.ImageURL = rewrite(src.ImageURL)
	// Renditions are re-derived for the clone (FinalizeClone plans one), not copied: they are
	// not charged, and the clone's own folder is named by its id. A poster the source's
	// rendition made is re-rendered with it, so the clone never points into the source's
	// folder (which goes when the source is deleted).
	if key, _, ok := a.assetRef(src.ImageURL); ok && src.RenditionPrefix != nil && strings.HasPrefix(key, *src.RenditionPrefix) {
		draft.ImageURL = ""
	}
	draft.Rendition = src.ProcessingState != scene.ProcessingStateSkipped
	if src.ThumbnailDepthURL != nil {
		d := rewrite(*src.ThumbnailDepthURL)
		draft.ThumbnailDepthURL = &d
	}
	if src.LevelData != nil {
		// Assets referenced from levelData (audio, for example) are copied too: every URL of
		// the source owner's own key space that is not already part of the plan joins it.
		// Anything else — another customer's file, or another integration's — is left as the
		// text it is and never copied: levelData is free JSON its owner writes, and naming a
		// key there must not let a clone copy (and so read) objects its caller could not clone.
		ownPrefix := objectkeys.Customer(src.IntegrationID, src.OwnerID)
		refs := 0
		var err error
		draft.LevelData, _ = walkStrings(src.LevelData, func(s string) string {
			key, _, ok := a.assetRef(s)
			if !ok || err != nil {
				return s
			}
			if _, planned := mapped[key]; !planned && !(plan.FolderSrc != "" && strings.HasPrefix(key, plan.FolderSrc)) {
				if _, ok := cloneKey(key, in.IntegrationID, dst); !ok || !safeKey(key) || !strings.HasPrefix(key, ownPrefix) {
					return s // not an object of the source's owner: left as it is
				}
				if refs++; refs > maxLevelDataAssets {
					err = apperr.Conflict(fmt.Sprintf("levelData references more than %d assets", maxLevelDataAssets))
					return s
				}
				if _, err = add(key); err != nil {
					return s
				}
				draft.AssetKeys = append(draft.AssetKeys, mapped[key])
			}
			return rewrite(s)
		}).(map[string]any)
		if err != nil {
			return nil, plan, err
		}
	}
	return draft, plan, nil
}

// walkStrings returns a copy of a decoded JSON value with every string passed through f.
func walkStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = walkStrings(x, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = walkStrings(x, f)
		}
		return out
	default:
		return v
	}
}

// copyTitle is a Duplicate's title: the source title + ' (Copy)', the source shortened so the
// result stays within 200 characters.
func copyTitle(title string) string {
	if n := utf8.RuneCountInString(title); n+utf8.RuneCountInString(copySuffix) > maxTitle {
		title = strings.TrimSpace(string([]rune(title)[:maxTitle-utf8.RuneCountInString(copySuffix)]))
	}
	return title + copySuffix
}

// measure checks every planned object is in the store and sums the bytes the clone will hold:
// a HEAD per single object (recording its size in the plan). A LOD folder holds what the scene
// was charged for less its single objects. When the scene recorded its file count at commit,
// the folder's manifest gets a HEAD and the plan carries the count and bytes for the copy's
// own listing to check (one listing in all, not one here and one in the copy); an older scene's
// folder is listed here, where fewer bytes mean tiles (or the manifest) are gone.
func (a *Activities) measure(ctx context.Context, src *ent.Scene, plan *schema.ClonePlan) (bytes int64, total int, err error) {
	var singles int64
	for i := range plan.Objects {
		o := &plan.Objects[i]
		head, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(o.Src)})
		var nf *s3types.NotFound
		if errors.As(err, &nf) {
			return 0, 0, sourceFilesMissing(o.Src[strings.LastIndex(o.Src, "/")+1:])
		}
		if err != nil {
			return 0, 0, fmt.Errorf("checking %s: %w", o.Src, err)
		}
		o.Size = aws.ToInt64(head.ContentLength)
		bytes += o.Size
		if slices.Contains(src.AssetKeys, o.Src) {
			singles += o.Size
		}
	}
	total = len(plan.Objects)
	if plan.FolderSrc == "" {
		return bytes, total, nil
	}
	if src.LodFiles != nil && *src.LodFiles > 0 {
		// The scene's splatUrl names its manifest, inside the folder.
		manifest, ok := strings.CutPrefix(src.SplatURL, a.AssetBase+"/")
		if !ok || !strings.HasPrefix(manifest, plan.FolderSrc) {
			return 0, 0, fmt.Errorf("scene %s: splatUrl %q is not in its LOD folder", src.ID, src.SplatURL)
		}
		_, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(manifest)})
		var nf *s3types.NotFound
		if errors.As(err, &nf) {
			return 0, 0, sourceFilesMissing(manifest[strings.LastIndex(manifest, "/")+1:])
		}
		if err != nil {
			return 0, 0, fmt.Errorf("checking %s: %w", manifest, err)
		}
		plan.FolderFiles, plan.FolderBytes = *src.LodFiles, src.FileSizeBytes-singles
		return bytes + plan.FolderBytes, total + plan.FolderFiles, nil
	}
	var folderBytes int64
	var n int
	err = a.listFolder(ctx, plan.FolderSrc, func(page []s3types.Object) error {
		for _, o := range page {
			folderBytes += aws.ToInt64(o.Size)
		}
		n += len(page)
		activity.RecordHeartbeat(ctx, n)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n == 0 || folderBytes < src.FileSizeBytes-singles {
		return 0, 0, sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d of %d bytes", folderBytes, src.FileSizeBytes-singles))
	}
	// What was listed is what is charged, and the copy's own listing must find exactly that:
	// a folder that grows between the two (a tile rewritten bigger) would otherwise be copied
	// at its new size and charged at the old one.
	plan.FolderFiles, plan.FolderBytes = n, folderBytes
	return bytes + folderBytes, total + n, nil
}

// CopyCloneInput is one job's copy: the plan PrepareClone made, the job's folder (Prefix) and
// how many copies run at once.
type CopyCloneInput struct {
	JobID        string
	Prefix       string
	Plan         schema.ClonePlan
	TotalObjects int
	Concurrency  int
}

// CloneProgress is CopyCloneObjects' heartbeat, which the clone API reads to answer polls and
// the Temporal UI shows on the pending activity.
type CloneProgress struct {
	Copied int `json:"copied"`
	Total  int `json:"total"`
}

// CopyCloneResult counts what the copy did: Copied objects it copied in this attempt, Skipped
// objects an earlier attempt had copied already.
type CopyCloneResult struct {
	Copied  int
	Skipped int
}

// copyItem is one object to copy. verify asks for a HEAD of the copy: the single objects of a
// plan were measured (and charged) by PrepareClone, possibly long before the copy.
type copyItem struct {
	src, dst string
	size     int64
	verify   bool
}

// CopyCloneObjects copies every planned object inside the store (S3 CopyObject: the bytes never
// pass through this process), Concurrency at a time, heartbeating its progress. A retry after
// a crash resumes: it lists the job's folder once and skips every object already there with the
// source's size (S3 writes an object whole or not at all), so nothing copied before the crash
// is copied again, including what was copied after the last heartbeat reached the server. A
// source object that vanished fails the job with 409 SOURCE_FILES_MISSING; a cancellation (the
// job was abandoned) stops the copies and returns.
func (a *Activities) CopyCloneObjects(ctx context.Context, in CopyCloneInput) (CopyCloneResult, error) {
	if in.JobID == "" || in.Concurrency <= 0 || !safePrefix(in.Prefix) {
		return CopyCloneResult{}, badInput("CopyCloneObjects: job, a positive concurrency and the job's folder are required")
	}
	for _, o := range in.Plan.Objects {
		if !strings.HasPrefix(o.Dst, in.Prefix) {
			return CopyCloneResult{}, badInput("CopyCloneObjects: %q is outside the job's folder", o.Dst)
		}
	}
	if in.Plan.FolderSrc != "" && (!strings.HasPrefix(in.Plan.FolderDst, in.Prefix) || !safePrefix(in.Plan.FolderSrc)) {
		return CopyCloneResult{}, badInput("CopyCloneObjects: bad folder %q → %q", in.Plan.FolderSrc, in.Plan.FolderDst)
	}
	var res CopyCloneResult
	done := map[string]int64{}
	// floor is the progress an earlier attempt already showed (its last heartbeat, which the
	// clone API answered polls with) or more: what is already in the job's folder. A resumed
	// copy never reports less than it (polls must never go backwards, issue 12 point 13); its
	// count catches up as it skips what is done, then passes it.
	floor := 0
	if activity.HasHeartbeatDetails(ctx) {
		var last CloneProgress
		if err := activity.GetHeartbeatDetails(ctx, &last); err == nil {
			floor = last.Copied
		}
	}
	if activity.HasHeartbeatDetails(ctx) || activity.GetInfo(ctx).Attempt > 1 {
		err := a.listFolder(ctx, in.Prefix, func(page []s3types.Object) error {
			for _, o := range page {
				done[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
			}
			// A long listing keeps the attempt alive, at the progress already shown.
			activity.RecordHeartbeat(ctx, CloneProgress{Copied: min(max(floor, len(done)), in.TotalObjects), Total: in.TotalObjects})
			return nil
		})
		if err != nil {
			return res, err
		}
	}
	floor = min(max(floor, len(done)), in.TotalObjects)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The queue holds a whole listing page beyond the copies in flight, so the next page is
	// listed while this one is copied: with a queue as short as the pool, every page's listing
	// (0.2-0.6 s for 1 000 keys on versitygw) left the copies idle, about a tenth of a 5 000-tile
	// clone.
	items := make(chan copyItem, in.Concurrency+deleteBatch)
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	progress := CloneProgress{Copied: floor, Total: in.TotalObjects}
	step := func(copied bool) {
		mu.Lock()
		defer mu.Unlock()
		if copied {
			res.Copied++
		} else {
			res.Skipped++
		}
		progress.Copied = max(floor, res.Copied+res.Skipped)
		// The SDK throttles what reaches the server; recording every object costs nothing.
		activity.RecordHeartbeat(ctx, progress)
	}
	var wg sync.WaitGroup
	for range in.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				if ctx.Err() != nil {
					continue // failed or cancelled: drain the queue without calling the store
				}
				if size, ok := done[it.dst]; ok && size == it.size {
					step(false)
					continue
				}
				if err := a.copyObject(ctx, it.src, it.dst); err != nil {
					fail(err)
					continue // drain: the producer stops on the cancellation
				}
				if it.verify {
					if err := a.verifyCopy(ctx, it); err != nil {
						fail(err)
						continue
					}
				}
				step(true)
			}
		}()
	}
	produce := func(it copyItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	activity.RecordHeartbeat(ctx, progress)
	func() {
		defer close(items)
		for _, o := range in.Plan.Objects {
			if !produce(copyItem{src: o.Src, dst: o.Dst, size: o.Size, verify: true}) {
				return
			}
		}
		if in.Plan.FolderSrc == "" {
			return
		}
		var files int
		var bytes int64
		err := a.listFolder(ctx, in.Plan.FolderSrc, func(page []s3types.Object) error {
			for _, o := range page {
				k := aws.ToString(o.Key)
				files, bytes = files+1, bytes+aws.ToInt64(o.Size)
				if !produce(copyItem{src: k, dst: in.Plan.FolderDst + strings.TrimPrefix(k, in.Plan.FolderSrc), size: aws.ToInt64(o.Size)}) {
					return ctx.Err()
				}
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			fail(err)
		}
		// The folder must hold exactly what the job reserved (the count and bytes recorded at
		// commit, or listed when the job was planned), checked by the one listing the copy needs
		// anyway: the copy fails whole, and rolls back, when tiles are gone — or when they grew
		// (a tile rewritten bigger than committed), since the clone would then hold more bytes
		// than it is charged for.
		if err == nil && in.Plan.FolderFiles > 0 && (files != in.Plan.FolderFiles || bytes != in.Plan.FolderBytes) {
			fail(folderMismatch(files, bytes, in.Plan.FolderFiles, in.Plan.FolderBytes))
		}
	}()
	wg.Wait()
	if firstErr != nil {
		return res, clientErrorOr(firstErr)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// verifyCopy checks a copied single object has the size PrepareClone measured and reserved: a
// source rewritten at another size in between is refused (the job rolls back) rather than held
// at a size nobody is charged for.
func (a *Activities) verifyCopy(ctx context.Context, it copyItem) error {
	head, err := a.Objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(it.dst)})
	if err != nil {
		return fmt.Errorf("checking the copy %s: %w", it.dst, err)
	}
	if n := aws.ToInt64(head.ContentLength); n != it.size {
		name := it.src[strings.LastIndex(it.src, "/")+1:]
		return sourceFilesMissing(fmt.Sprintf("%s holds %d bytes, %d were reserved", name, n, it.size))
	}
	return nil
}

// folderMismatch is the 409 of a LOD folder that does not hold what its scene recorded. Fewer
// files or bytes are the spec's missing source files; more bytes mean the stored files are not
// the ones committed either, so the answer is the same: the record's files are not in storage.
func folderMismatch(files int, bytes int64, wantFiles int, wantBytes int64) error {
	if files < wantFiles {
		return sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d of %d files", files, wantFiles))
	}
	return sourceFilesMissing(fmt.Sprintf("the LOD folder holds %d files of %d bytes, the scene recorded %d files of %d bytes",
		files, bytes, wantFiles, wantBytes))
}

// copyObject copies src to dst inside the bucket. Objects are at most 2 GiB (the single-file
// maximum; LOD files are at most 50 MiB), well under CopyObject's 5 GiB limit.
func (a *Activities) copyObject(ctx context.Context, src, dst string) error {
	_, err := a.Objects.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(dst),
		CopySource: aws.String(CopySource(a.Bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy})
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
		return sourceFilesMissing(src[strings.LastIndex(src, "/")+1:] + " was removed during the copy")
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// CopySource is the x-amz-copy-source value of a CopyObject: bucket/key, URL-encoded segment
// by segment (S3 decodes it; a literal '+' must be encoded, or some stores read it as a space).
func CopySource(bucket, key string) string {
	segs := strings.Split(bucket+"/"+key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	return strings.Join(segs, "/")
}

// FinalizeCloneInput names the job whose copy is complete.
type FinalizeCloneInput struct {
	JobID         string
	OwnerRecordID string
	AccountID     string
}

// FinalizeCloneResult is the new scene and the account storage meter after the clone.
type FinalizeCloneResult struct {
	SplatID string
	Usage   quota.Snapshot
	// RenditionPending says the clone was created with a rendition to build.
	RenditionPending bool
}

// FinalizeClone turns the job into its scene in one transaction: the scene row from the draft
// (private, unpublished, allowClone false, holding no scene slot until its first publish), the
// job row deleted — its reserved bytes stay charged, now to the scene. A retry after a lost
// answer finds the scene and answers the same. A job whose row is gone (its customer was
// deleted) fails with 404, and the workflow removes the copies.
func (a *Activities) FinalizeClone(ctx context.Context, in FinalizeCloneInput) (FinalizeCloneResult, error) {
	if in.JobID == "" || in.OwnerRecordID == "" || in.AccountID == "" {
		return FinalizeCloneResult{}, badInput("FinalizeClone: job, owner and account are required")
	}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return FinalizeCloneResult{}, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	// Lock order: customer, then the job row (as the customer deletion and RollbackClone).
	if _, err := tx.ExternalUser.Query().Where(externaluser.ID(in.OwnerRecordID)).ForUpdate().Only(ctx); err != nil {
		return FinalizeCloneResult{}, fmt.Errorf("locking customer %s: %w", in.OwnerRecordID, err)
	}
	job, err := tx.CloneJob.Query().Where(clonejob.ID(in.JobID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		if n, err := tx.Scene.Query().Where(scene.ID(in.JobID)).Count(ctx); err != nil || n == 0 {
			if err != nil {
				return FinalizeCloneResult{}, err
			}
			return FinalizeCloneResult{}, ClientError(apperr.NotFound("external user not found"))
		}
		acct, err := tx.Account.Get(ctx, in.AccountID)
		if err != nil {
			return FinalizeCloneResult{}, err
		}
		return FinalizeCloneResult{SplatID: in.JobID, Usage: quota.AccountSnapshot(acct)}, nil
	}
	if err != nil {
		return FinalizeCloneResult{}, fmt.Errorf("locking clone job %s: %w", in.JobID, err)
	}
	acct, err := recheckClone(ctx, tx, job)
	if err != nil {
		return FinalizeCloneResult{}, err
	}
	d := job.Draft
	create := tx.Scene.Create().SetID(job.ID).SetIntegrationID(job.IntegrationID).SetOwnerID(job.OwnerID).
		SetTitle(d.Title).SetDescription(d.Description).SetSplatType(scene.SplatType(d.SplatType)).
		SetSplatURL(d.SplatURL).SetNillableLodFolderKey(d.LodFolderKey).SetImageURL(d.ImageURL).
		SetNillableThumbnailDepthURL(d.ThumbnailDepthURL).SetNillableLodFiles(d.LodFiles).SetVisibility(scene.VisibilityPrivate).
		SetAllowEmbed(d.AllowEmbed).SetAllowComments(d.AllowComments).SetAllowReactions(d.AllowReactions).
		SetAllowClone(false).SetFileSizeBytes(job.Bytes).SetAssetKeys(d.AssetKeys).
		SetClonedFromID(job.SourceSceneID).SetHoldsSplatSlot(false)
	if d.RemixedFrom != nil {
		create.SetRemixedFrom(d.RemixedFrom)
	}
	if d.LevelData != nil {
		create.SetLevelData(d.LevelData)
	}
	if d.InitialCameraPosition != nil {
		create.SetInitialCameraPosition(d.InitialCameraPosition)
	}
	if d.InitialCameraRotation != nil {
		create.SetInitialCameraRotation(d.InitialCameraRotation)
	}
	rendition := d.Rendition
	if rendition {
		create.SetProcessingState(scene.ProcessingStatePending).
			SetRenditionPrefix(RenditionFolder(job.IntegrationID, job.OwnerID, job.ID))
	}
	sc, err := create.Save(ctx)
	if err != nil {
		return FinalizeCloneResult{}, fmt.Errorf("creating the clone %s: %w", job.ID, err)
	}
	if err := tx.CloneJob.DeleteOneID(job.ID).Exec(ctx); err != nil {
		return FinalizeCloneResult{}, fmt.Errorf("closing clone job %s: %w", job.ID, err)
	}
	if err := announceScene(ctx, tx, job.IntegrationID, job.ID); err != nil {
		return FinalizeCloneResult{}, err
	}
	var hooks events.Batch
	if err := a.Events.EmitSplat(ctx, tx, &hooks, events.SplatCreated, sc, ""); err != nil {
		return FinalizeCloneResult{}, err
	}
	if err := a.Events.Emit(ctx, tx, &hooks, job.IntegrationID, events.CloneSucceeded, events.Value(events.CloneSucceededData{
		JobID: cloneJobID(ctx), SplatID: job.ID, SourceSplatID: job.SourceSceneID})); err != nil {
		return FinalizeCloneResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return FinalizeCloneResult{}, fmt.Errorf("committing the clone %s: %w", job.ID, err)
	}
	a.Events.Flush(ctx, &hooks)
	metrics.CloneJobs.WithLabelValues("succeeded").Inc()
	return FinalizeCloneResult{SplatID: job.ID, Usage: quota.AccountSnapshot(acct), RenditionPending: rendition}, nil
}

// recheckClone applies the commit's rules once more, under the row locks, before a job becomes
// a scene: the copy can take minutes, and in that time the customer may have been deactivated,
// suspended or canceled, or had their caps (or the account's) lowered below what they hold. The
// reservation is given back and taken again through quota.Reserve, so the status and every cap
// are checked exactly as a commit checks them (same envelopes); a refusal is a client error and
// the workflow rolls the job back (copies deleted, reservation released). A customer whose
// billing state is not active is refused as well, even if an integrator set them active again:
// their scenes are in retained archive, and a clone must not land beside them. It returns the
// account after the charge (unchanged on success: the release and the charge cancel out).
func recheckClone(ctx context.Context, tx *ent.Tx, job *ent.CloneJob) (*ent.Account, error) {
	u, err := tx.ExternalUser.Query().Where(externaluser.ID(job.OwnerID)).Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading customer %s: %w", job.OwnerID, err)
	}
	if u.BillingState != externaluser.BillingStateActive {
		return nil, ClientError(apperr.Unauthorized("external user is inactive or suspended"))
	}
	if err := quota.Release(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes}); err != nil {
		return nil, fmt.Errorf("re-checking clone job %s: %w", job.ID, err)
	}
	_, acct, err := quota.Reserve(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes})
	if err != nil {
		return nil, clientErrorOr(err)
	}
	return acct, nil
}

// RollbackCloneInput names the job to undo; Message is why it failed, for clone.failed.
type RollbackCloneInput struct {
	JobID         string
	IntegrationID string
	OwnerRecordID string
	SourceSplatID string
	Message       string
}

// CloneFailedMessage is clone.failed's message when the failure is not the client's to read.
const CloneFailedMessage = "the clone failed and was rolled back"

// cloneJobID is the clone job's public id (the API's jobId): its workflow run's id.
func cloneJobID(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return activity.GetInfo(ctx).WorkflowExecution.RunID
}

// RollbackCloneResult says what the rollback undid.
type RollbackCloneResult struct {
	Deleted  int
	Released int64
}

// RollbackClone undoes a failed or abandoned job: every object in the job's folder goes (what
// the copy made, including anything copied after its last heartbeat), then the job row and its
// reservation, in one transaction. Deleting objects already gone is success and a missing row
// means the bytes were released already (or went with a deleted customer), so a retry is
// harmless. A job that became a scene is never undone.
func (a *Activities) RollbackClone(ctx context.Context, in RollbackCloneInput) (RollbackCloneResult, error) {
	if in.JobID == "" || in.IntegrationID == "" || in.OwnerRecordID == "" {
		return RollbackCloneResult{}, badInput("RollbackClone: job, integration and owner are required")
	}
	if n, err := a.Ent.Scene.Query().Where(scene.ID(in.JobID)).Count(ctx); err != nil || n > 0 {
		return RollbackCloneResult{}, err
	}
	del, err := a.DeleteObjects(ctx, DeleteObjectsInput{Prefixes: []string{ClonePrefix(in.IntegrationID, in.OwnerRecordID, in.JobID)}})
	if err != nil {
		return RollbackCloneResult{}, err
	}
	out := RollbackCloneResult{Deleted: del.Deleted}
	tx, err := a.Ent.Tx(ctx)
	if err != nil {
		return out, err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExternalUser.Query().Where(externaluser.ID(in.OwnerRecordID)).ForUpdate().Only(ctx); err != nil && !ent.IsNotFound(err) {
		return out, fmt.Errorf("locking customer %s: %w", in.OwnerRecordID, err)
	}
	// clone.failed is recorded once per job (EmitOnce, keyed by the job), whichever attempt of
	// the rollback commits first.
	var hooks events.Batch
	failed := func(sourceSplatID string) error {
		msg := in.Message
		if msg == "" {
			msg = CloneFailedMessage
		}
		jobID := cloneJobID(ctx)
		return a.Events.EmitOnce(ctx, tx, &hooks, "clone.failed/"+in.JobID+"/"+jobID, in.IntegrationID, events.CloneFailed,
			events.Value(events.CloneFailedData{JobID: jobID, SourceSplatID: sourceSplatID, Message: msg}))
	}
	job, err := tx.CloneJob.Query().Where(clonejob.ID(in.JobID)).ForUpdate().Only(ctx)
	if ent.IsNotFound(err) {
		// Nothing was reserved (the job failed before it could) or an earlier attempt
		// released it: the job is rolled back either way.
		if err := failed(in.SourceSplatID); err != nil {
			return out, err
		}
		if err := tx.Commit(); err != nil {
			return out, err
		}
		a.Events.Flush(ctx, &hooks)
		metrics.CloneJobs.WithLabelValues("rolled_back").Inc()
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("locking clone job %s: %w", in.JobID, err)
	}
	if err := quota.Release(ctx, tx, job.OwnerID, job.AccountID, quota.Charge{Bytes: job.Bytes}); err != nil {
		return out, fmt.Errorf("releasing clone job %s: %w", in.JobID, err)
	}
	if err := tx.CloneJob.DeleteOneID(job.ID).Exec(ctx); err != nil {
		return out, fmt.Errorf("deleting clone job %s: %w", in.JobID, err)
	}
	if err := failed(job.SourceSceneID); err != nil {
		return out, err
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("committing the rollback of clone job %s: %w", in.JobID, err)
	}
	a.Events.Flush(ctx, &hooks)
	out.Released = job.Bytes
	metrics.CloneJobs.WithLabelValues("rolled_back").Inc()
	return out, nil
}

// assetRef reads an asset URL in any of the forms a scene may hold: the stored form
// (AssetBase/<key>, what uploads answer and records keep) or the service's asset route
// (PublicBase/assets/<key>, or /assets/s/<token>/<key>, which answers hand out and a levelData
// author may paste). render builds the URL of another key in the same form; a signed URL
// becomes the stable unsigned one, since its token covers only the source's folder.
func (a *Activities) assetRef(u string) (key string, render func(string) string, ok bool) {
	return AssetRef(a.AssetBase, a.PublicBase, u)
}

// AssetRef is assetRef for the given bases (assetBase: config.AssetBase, publicBase:
// config.PublicBase, may be empty). The scene service reads levelData's audio URL with it, so a
// save and a clone agree on which URLs name an object.
func AssetRef(assetBase, publicBase, u string) (key string, render func(string) string, ok bool) {
	if key, ok := strings.CutPrefix(u, assetBase+"/"); ok {
		return key, func(k string) string { return assetBase + "/" + k }, true
	}
	if publicBase == "" {
		return "", nil, false
	}
	rest, ok := strings.CutPrefix(u, publicBase+"/assets/")
	if !ok {
		return "", nil, false
	}
	if signed, ok := strings.CutPrefix(rest, "s/"); ok {
		if _, rest, ok = strings.Cut(signed, "/"); !ok {
			return "", nil, false
		}
	}
	return rest, func(k string) string { return publicBase + "/assets/" + k }, true
}
