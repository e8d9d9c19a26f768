package scene

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/assetpurge"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/quota"
)

// commitGrace lets a commit that started just before its upload window closed still succeed;
// the orphan sweep waits longer than this before it deletes uncommitted uploads.
const commitGrace = time.Hour

// commitRequest is a validated POST /api/v1/splats body.
type commitRequest struct {
	title, description, visibility, splatType  string
	splatURL, lodFolderKey, imageURL, depthURL string
	cameraPosition, cameraRotation             []float64
	// levelData is the editor embed's optional viewer state (nil: none).
	levelData map[string]any
}

// commitFields are the fields of the v1 commit body.
var commitFields = []string{"title", "description", "visibility", "splatType", "splatUrl", "lodFolderKey", "imageUrl",
	"thumbnailDepthUrl", "initialCameraPosition", "initialCameraRotation"}

// parseCommit applies the commit body rules; the editor embed's commit (editor) also accepts
// levelData.
func parseCommit(body []byte, editor bool) (*commitRequest, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	r := &commitRequest{visibility: "private", splatType: "file"}
	if editor {
		f.Only(append(slices.Clone(commitFields), "levelData")...)
		r.levelData, _ = parseLevelData(f)
	} else {
		f.Only(commitFields...)
	}
	f.Require("title", "splatUrl")
	if t, ok := f.String("title", 1, 10_000); ok {
		r.title = strings.TrimSpace(t)
		if n := len([]rune(r.title)); n < 1 || n > 200 {
			f.Issuef("title: must be 1-200 characters after trimming")
		}
	}
	r.description, _ = f.String("description", 0, 2000)
	if v, ok := f.Enum("visibility", "private", "public"); ok {
		r.visibility = v
	}
	if v, ok := f.Enum("splatType", "file", "lod"); ok {
		r.splatType = v
	}
	r.splatURL, _ = f.String("splatUrl", 1, 4096)
	r.lodFolderKey, _ = f.String("lodFolderKey", 1, 1024)
	r.imageURL, _ = f.String("imageUrl", 1, 4096)
	r.depthURL, _ = f.String("thumbnailDepthUrl", 1, 4096)
	if r.splatType == "lod" && r.lodFolderKey == "" {
		f.Issuef("lodFolderKey: required for splatType 'lod'")
	}
	if r.splatType == "file" && f.Has("lodFolderKey") && !f.IsNull("lodFolderKey") {
		f.Issuef("lodFolderKey: only for splatType 'lod'")
	}
	if r.depthURL != "" && r.imageURL == "" {
		f.Issuef("thumbnailDepthUrl: requires imageUrl")
	}
	r.cameraPosition = vec3(f, "initialCameraPosition")
	r.cameraRotation = vec3(f, "initialCameraRotation")
	if err := f.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// vec3 reads an optional array of exactly three finite numbers.
func vec3(f *httpx.Fields, name string) []float64 {
	raw, ok := f.Raw(name)
	if !ok || f.IsNull(name) {
		return nil
	}
	// Pointers tell a null element (which would decode as 0) from a number.
	var v []*float64
	if err := json.Unmarshal(raw, &v); err != nil || len(v) != 3 || slices.Contains(v, nil) {
		f.Issuef("%s: must be an array of 3 numbers", name)
		return nil
	}
	out := make([]float64, 3)
	for i, x := range v {
		if math.IsNaN(*x) || math.IsInf(*x, 0) {
			f.Issuef("%s: must be finite numbers", name)
			return nil
		}
		out[i] = *x
	}
	return out
}

// asset is one upload a commit references, resolved to its ticket.
type asset struct {
	ticket *ent.UploadTicket
	key    string
}

// resolve turns an asset URL into its key and upload ticket. A URL that is not one of ours is a
// 400; a key under another customer's (or integration's) prefix is the spec's 403.
func (s *Service) resolve(ctx context.Context, field, rawURL string, owner *ent.ExternalUser, kind uploadticket.Kind) (*asset, error) {
	key, ok := strings.CutPrefix(rawURL, s.assetBase+"/")
	if !ok || key == "" {
		return nil, apperr.Invalid("invalid upload URL", field+": not an upload URL issued by this service")
	}
	parts := strings.SplitN(key, "/", 7) // i, INT, u, OWNER, kind, TICKET, rest
	if len(parts) < 7 || parts[0] != "i" || parts[2] != "u" {
		return nil, apperr.Invalid("invalid upload URL", field+": not an upload URL issued by this service")
	}
	if parts[1] != owner.IntegrationID || parts[3] != owner.ID {
		return nil, apperr.Forbidden("uploaded object belongs to another external user")
	}
	prefix := strings.Join(parts[:6], "/") + "/"
	t, err := s.db.Ent.UploadTicket.Query().Where(uploadticket.Prefix(prefix)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.Invalid("invalid upload URL", field+": no such upload")
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if t.Kind != kind {
		return nil, apperr.Invalid("invalid upload URL", fmt.Sprintf("%s: this URL comes from another upload endpoint", field))
	}
	if t.CommittedAt != nil {
		return nil, s.alreadyCommitted(ctx, field, t.ID, owner)
	}
	if s.now().After(t.ExpiresAt.Add(commitGrace)) {
		return nil, apperr.Invalid("invalid upload URL", field+": the upload window has closed; upload again")
	}
	return &asset{ticket: t, key: key}, nil
}

// object returns the ticket's declared object for key.
func (a *asset) object() (schema.UploadObject, bool) {
	for _, o := range a.ticket.Objects {
		if o.Key == a.key {
			return o, true
		}
	}
	return schema.UploadObject{}, false
}

// verifyObject checks an uploaded object exists with its declared size and type and starts like
// its format; it returns the stored size.
func (s *Service) verifyObject(ctx context.Context, field string, o schema.UploadObject) error {
	head, err := s.store.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(o.Key)})
	var nf *s3types.NotFound
	if errors.As(err, &nf) {
		return apperr.Invalid("upload not found", field+": nothing was uploaded to this URL")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if aws.ToInt64(head.ContentLength) != o.Size {
		return apperr.Invalid("upload does not match", fmt.Sprintf("%s: uploaded %d bytes, declared %d", field, aws.ToInt64(head.ContentLength), o.Size))
	}
	if aws.ToString(head.ContentType) != o.ContentType {
		return apperr.Invalid("upload does not match", field+": uploaded with another content type than declared")
	}
	return s.sniffObject(ctx, field, o.Key, o.Size)
}

// sniffObject reads the first bytes of an object and checks they look like its format.
func (s *Service) sniffObject(ctx context.Context, field, key string, size int64) error {
	out, err := s.store.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.store.Bucket), Key: aws.String(key),
		Range: aws.String("bytes=0-63")})
	if err != nil {
		return apperr.Internal(err)
	}
	defer out.Body.Close()
	head, err := io.ReadAll(io.LimitReader(out.Body, 64))
	if err != nil {
		return apperr.Internal(err)
	}
	if err := sniff(strings.ToLower(path.Ext(key)), head, size); err != nil {
		return apperr.Invalid("upload is not a valid file", field+": "+err.Error())
	}
	return nil
}

// verifyFolder checks every object of a LOD ticket is in the store with its declared size, with
// one listing instead of 20 000 HEADs, and sniffs the manifest and one cell.
func (s *Service) verifyFolder(ctx context.Context, t *ent.UploadTicket) error {
	sizes := make(map[string]int64, len(t.Objects))
	p := s3.NewListObjectsV2Paginator(s.store.Client, &s3.ListObjectsV2Input{Bucket: aws.String(s.store.Bucket), Prefix: aws.String(t.Prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return apperr.Internal(err)
		}
		for _, o := range page.Contents {
			sizes[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	var missing int
	var cell schema.UploadObject
	for _, o := range t.Objects {
		got, ok := sizes[o.Key]
		switch {
		case !ok:
			missing++
		case got != o.Size:
			return apperr.Invalid("upload does not match", fmt.Sprintf("lodFolderKey: %s has %d bytes, declared %d", o.RelativePath, got, o.Size))
		}
		// Extensions are case-insensitive everywhere (validateLOD lowercases them too).
		if strings.EqualFold(path.Ext(o.Key), ".webp") && cell.Key == "" {
			cell = o
		}
	}
	if missing > 0 {
		return apperr.Invalid("upload incomplete", fmt.Sprintf("lodFolderKey: %d of %d files were not uploaded", missing, len(t.Objects)))
	}
	if err := s.sniffObject(ctx, "splatUrl", t.Prefix+LODManifest, sizes[t.Prefix+LODManifest]); err != nil {
		return err
	}
	return s.sniffObject(ctx, "lodFolderKey", cell.Key, cell.Size)
}

func (s *Service) commit(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	req, err := parseCommit(c.Body(), caller.IsSession())
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	owner, err := s.customer(ctx, caller, eu)
	if err != nil {
		return err
	}
	if owner == nil {
		return apperr.NotFound("external user not found")
	}
	if owner.Status != "active" {
		return apperr.Unauthorized("external user is inactive")
	}

	var assets []*asset
	var size int64
	var keys []string
	var lodKey *string
	var lodFiles *int
	switch req.splatType {
	case "file":
		a, err := s.resolve(ctx, "splatUrl", req.splatURL, owner, uploadticket.KindSplatFile)
		if err != nil {
			return err
		}
		o, ok := a.object()
		if !ok {
			// Another key under the caller's own upload prefix (another file of the ticket's
			// folder, say): not the fileUrl this upload issued.
			return apperr.Invalid("invalid upload URL", "splatUrl: must be the fileUrl of a splat-file upload")
		}
		if a.ticket.MultipartUploadID != nil && a.ticket.MultipartCompletedAt == nil {
			return apperr.Invalid("upload incomplete", "splatUrl: this multipart upload is not completed; "+
				"POST /api/v1/uploads/splat-file/"+a.ticket.ID+"/complete first")
		}
		if err := s.verifyObject(ctx, "splatUrl", o); err != nil {
			return err
		}
		assets, size, keys = append(assets, a), size+o.Size, append(keys, o.Key)
	case "lod":
		a, err := s.resolve(ctx, "splatUrl", req.splatURL, owner, uploadticket.KindLodFolder)
		if err != nil {
			return err
		}
		if a.key != a.ticket.Prefix+LODManifest {
			return apperr.Invalid("validation failed", "splatUrl: must be the manifestUrl of the lod-folder upload")
		}
		if req.lodFolderKey != strings.TrimSuffix(a.ticket.Prefix, "/") {
			return apperr.Invalid("validation failed", "lodFolderKey: must be the folderKey of the same lod-folder upload as splatUrl")
		}
		if err := s.verifyFolder(ctx, a.ticket); err != nil {
			return err
		}
		lodKey = &req.lodFolderKey
		n := len(a.ticket.Objects)
		lodFiles = &n
		assets, size = append(assets, a), size+a.ticket.TotalBytes
	}
	var imageTicket *asset
	var unused []string // objects of a used image ticket the scene does not reference
	if req.imageURL != "" && req.imageURL == req.depthURL {
		return apperr.Invalid("validation failed", "thumbnailDepthUrl: must differ from imageUrl")
	}
	for _, img := range []struct{ field, url, role string }{{"imageUrl", req.imageURL, "thumbnail"}, {"thumbnailDepthUrl", req.depthURL, "depth"}} {
		if img.url == "" {
			continue
		}
		a, err := s.resolve(ctx, img.field, img.url, owner, uploadticket.KindSplatImages)
		if err != nil {
			return err
		}
		o, ok := a.object()
		if !ok {
			return apperr.Invalid("invalid upload URL", img.field+": no such upload")
		}
		if !strings.HasPrefix(path.Base(o.Key), img.role+".") {
			return apperr.Invalid("validation failed", fmt.Sprintf("%s: must be the %s fileUrl of a splat-images upload", img.field, img.role))
		}
		if err := s.verifyObject(ctx, img.field, o); err != nil {
			return err
		}
		size, keys = size+o.Size, append(keys, o.Key)
		if imageTicket == nil || imageTicket.ticket.ID != a.ticket.ID {
			assets = append(assets, a)
			imageTicket = a
		}
	}
	// The editor's levelData may name an audio upload: charged with the scene (attach.go).
	audio, err := s.audioAttachment(ctx, owner, req.levelData, nil)
	if err != nil {
		return err
	}
	if audio != nil {
		assets, size, keys = append(assets, audio.ticket), size+audio.size, append(keys, audio.key)
	}
	if imageTicket != nil {
		for _, o := range imageTicket.ticket.Objects {
			if !slices.Contains(keys, o.Key) {
				unused = append(unused, o.Key)
			}
		}
	}

	var sc *ent.Scene
	var acct *ent.Account
	// refused is the quota answer of a commit the transaction turned down, and purge the outbox
	// row of objects to remove (the refused commit's uploads, or the unused image of a commit).
	var refused error
	var purge *ent.AssetPurge
	var taken *errUploadTaken
	// hooks are the webhook events of the commit (splat.created, and splat.published for a
	// scene committed public), written with the scene and started after the commit.
	var hooks events.Batch
	err = s.db.InTx(ctx, func(tx *ent.Tx) error {
		var err error
		if _, acct, err = quota.Reserve(ctx, tx, owner.ID, caller.AccountID, quota.Charge{Bytes: size, Slot: true}); err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || (e.Status != http.StatusRequestEntityTooLarge && e.Status != http.StatusForbidden) {
				return err
			}
			// The spec: when commit fails for quota, remove the uploaded objects. Not here and
			// not blindly: a concurrent commit of the same upload may have just won, so the
			// outbox row names the tickets, committed with the refusal, and the purge workflow
			// removes only those still uncommitted when it runs (activities.ClaimUploads).
			refused = err
			purge, err = s.uploadPurge(ctx, tx, owner, caller.IntegrationID, ticketIDs(assets), nil)
			return err
		}
		create := tx.Scene.Create().SetIntegrationID(caller.IntegrationID).SetOwnerID(owner.ID).
			SetTitle(req.title).SetDescription(req.description).SetVisibility(scene.Visibility(req.visibility)).
			SetSplatType(scene.SplatType(req.splatType)).SetSplatURL(req.splatURL).SetNillableLodFolderKey(lodKey).
			SetNillableLodFiles(lodFiles).SetImageURL(req.imageURL).SetFileSizeBytes(size).SetAssetKeys(keys)
		if req.depthURL != "" {
			create.SetThumbnailDepthURL(req.depthURL)
		}
		if req.cameraPosition != nil {
			create.SetInitialCameraPosition(req.cameraPosition)
		}
		if req.cameraRotation != nil {
			create.SetInitialCameraRotation(req.cameraRotation)
		}
		// With no camera in levelData, the commit's initial camera becomes its start camera.
		if ld := seedCamera(req.levelData, req.cameraPosition, req.cameraRotation); ld != nil {
			create.SetLevelData(ld)
		}
		if req.visibility == "public" {
			create.SetFirstPublishedAt(s.now())
		}
		// A rendition is planned in the same transaction (processing_state is its outbox);
		// the scene's id names its folder, so it is chosen here rather than by the insert.
		if _, ok := activities.RenditionFormat(req.splatType, req.splatURL); ok {
			if size >= s.clones.RenditionMinBytes {
				id := ids.New()
				create.SetID(id).SetProcessingState(scene.ProcessingStatePending).
					SetRenditionPrefix(activities.RenditionFolder(caller.IntegrationID, owner.ID, id))
			} else {
				create.SetProcessingMessage("smaller than this deployment's rendition threshold")
			}
		}
		if sc, err = create.Save(ctx); err != nil {
			return err
		}
		for _, a := range assets {
			// The committed_at guard makes a second concurrent commit of the same upload fail,
			// and so does a ticket a refused commit's purge has claimed (deleted).
			n, err := tx.UploadTicket.Update().Where(uploadticket.ID(a.ticket.ID), uploadticket.CommittedAtIsNil()).
				SetCommittedAt(s.now()).SetSceneID(sc.ID).Save(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				taken = &errUploadTaken{ticketID: a.ticket.ID}
				return taken
			}
		}
		if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatCreated, sc, owner.ExternalUserID); err != nil {
			return err
		}
		if sc.Visibility == scene.VisibilityPublic {
			if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatPublished, sc, owner.ExternalUserID); err != nil {
				return err
			}
		}
		if len(unused) > 0 {
			// The ticket is spent; an image it signed but the scene does not use would be
			// orphaned (the sweep takes only uncommitted tickets).
			if purge, err = s.uploadPurge(ctx, tx, owner, caller.IntegrationID, nil, unused); err != nil {
				return err
			}
		}
		return sceneChanged(ctx, tx, caller.IntegrationID, sc.ID)
	})
	if taken != nil {
		return s.alreadyCommitted(ctx, "splatUrl", taken.ticketID, owner)
	}
	if err != nil {
		return err
	}
	s.startAssetPurge(ctx, purge)
	if refused != nil {
		return refused
	}
	s.invalidateScene(ctx, caller.IntegrationID, sc.ID)
	s.events.Flush(ctx, &hooks)
	s.startRendition(ctx, sc, owner.ExternalUserID)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"status": "success", "splatId": sc.ID,
		"splat": s.itemOf(sc, owner.ExternalUserID, caller.ProductSlug, eu), "usage": quota.AccountSnapshot(acct),
	})
}

// errUploadTaken aborts a commit's transaction when one of its uploads was committed (or
// claimed by a refused commit's purge) after resolve saw it free.
type errUploadTaken struct{ ticketID string }

func (e *errUploadTaken) Error() string {
	return "upload ticket " + e.ticketID + " taken by another commit"
}

// alreadyCommitted is the 409 of a commit naming an upload that is no longer free. When the
// upload became a live scene of this very customer (same integration and EU: a retry whose first
// answer was lost), the answer names that scene's splatId so the client can carry on; otherwise
// it says nothing about where the upload went.
func (s *Service) alreadyCommitted(ctx context.Context, field, ticketID string, owner *ent.ExternalUser) error {
	conflict := apperr.Conflict(field + ": this upload is already part of a scene")
	t, err := s.db.Ent.UploadTicket.Get(ctx, ticketID)
	if ent.IsNotFound(err) {
		return apperr.Conflict(field + ": this upload was removed after a refused commit; upload again")
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if t.SceneID == nil || t.OwnerID != owner.ID || t.IntegrationID != owner.IntegrationID {
		return conflict
	}
	mine, err := s.db.Ent.Scene.Query().Where(scene.ID(*t.SceneID), scene.IntegrationID(owner.IntegrationID),
		scene.OwnerID(owner.ID), scene.ArchivedAtIsNil()).Exist(ctx)
	if err != nil {
		return apperr.Internal(err)
	}
	if !mine {
		return conflict
	}
	return conflict.With("splatId", *t.SceneID)
}

// ticketIDs are the upload tickets a commit names.
func ticketIDs(assets []*asset) []string {
	out := make([]string, 0, len(assets))
	for _, a := range assets {
		if !slices.Contains(out, a.ticket.ID) {
			out = append(out, a.ticket.ID)
		}
	}
	return out
}

// uploadPurge writes, in the caller's transaction, the outbox row (asset_purges, kind upload)
// of uploads to remove: the tickets whose objects go if they are still uncommitted when the
// purge runs, and single keys (an unused image of a committed ticket). The PurgeAssets workflow
// re-checks both against the owner's scenes before deleting anything.
func (s *Service) uploadPurge(ctx context.Context, tx *ent.Tx, owner *ent.ExternalUser, integrationID string, tickets, keys []string) (*ent.AssetPurge, error) {
	if len(tickets)+len(keys) == 0 {
		return nil, nil
	}
	return tx.AssetPurge.Create().SetKind(assetpurge.KindUpload).SetIntegrationID(integrationID).
		SetExternalUserRecordID(owner.ID).SetExternalUserID(owner.ExternalUserID).
		SetTicketIds(tickets).SetKeys(keys).Save(ctx)
}
