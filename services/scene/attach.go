package scene

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/uploadticket"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/scenes"
)

// Uploads an editor save attaches to a scene after its commit: the thumbnail (imageUrl, which
// the editor captures from its canvas on first save) and the audio named by levelData.audio.url.
// Either is charged like any upload: its bytes join the scene's fileSizeBytes and the customer's
// and account's storage, its key joins the scene's asset keys (so delete, retention, clone and
// the asset route treat it as the scene's), and its upload ticket is committed to the scene. An
// upload the save replaces (another thumbnail, other audio, or levelData without audio) is
// released the same way and its object removed by an upload purge.

// attachment is one upload a save attaches.
type attachment struct {
	field string
	key   string
	// ticket is the upload's ticket, committed to the scene with the save; nil when the scene
	// holds the object already (a save that sends back the URL it was given).
	ticket *asset
	size   int64
	// check seals and checks the upload (verifyObject): run with its ticket locked, in the
	// transaction that commits it (scenes.LockUploads).
	check func(context.Context) error
}

// savePlan is what one editor PATCH changes in a scene's stored objects, worked out before its
// transaction (the HEADs and ticket look-ups stay outside the scene's row lock).
type savePlan struct {
	attach []attachment
	// imageKey is the key of the imageUrl the PATCH sets ("" when it sets none).
	imageKey string
	// audio says levelData was sent (the scene's audio is then what it names, maybe none);
	// audioKey is the key of levelData.audio.url ("" when levelData has no audio).
	audio    bool
	audioKey string
	// sizes are the stored sizes of the objects the save may release, measured before the
	// transaction from an unlocked read; a save that finds others under the lock measures them
	// there.
	sizes map[string]int64
}

// assetKey reads an asset URL in any form a client holds (the stored or upload URL, or an
// answer's asset-route URL, signed or not) as the key of an object in the scene key space.
func (s *Service) assetKey(u string) (string, bool) {
	key, _, ok := objectkeys.AssetRef(s.assetBase, s.urls.PublicBase(), u)
	if !ok {
		return "", false
	}
	if _, ok := scenes.ParseAssetKey(key); !ok {
		return "", false
	}
	return key, true
}

// keyKind is the upload kind of a key (kindFile, kindAudio, ...), for an upload's key and for
// a clone's copy of one alike.
func keyKind(key string) string {
	k, ok := objectkeys.Parse(key)
	if ok {
		k, ok = k.Source()
	}
	if !ok {
		return ""
	}
	return k.Kind
}

// ownsKey reports whether key lies in the customer's own key space.
func ownsKey(owner *ent.ExternalUser, key string) bool {
	return strings.HasPrefix(key, objectkeys.Customer(owner.IntegrationID, owner.ID))
}

// audioAttachment resolves levelData.audio.url for a save: the customer's own audio upload,
// fresh (its ticket uncommitted, the object uploaded as declared: HEAD and first bytes) or held
// already by the scene (held: its asset keys). Anything else is a 400 naming the field. The
// URL in ld is rewritten to the stored form, whatever form the client sent, so that the stored
// levelData always names objects one way and answers render it for their reader.
func (s *Service) audioAttachment(ctx context.Context, owner *ent.ExternalUser, ld map[string]any, held []string) (*attachment, error) {
	const field = "levelData.audio.url"
	audio, u := scenes.LevelAudio(ld)
	if audio == nil {
		return nil, nil
	}
	notOurs := apperr.Invalid("invalid audio URL", field+": must be the fileUrl of an audio upload (POST /api/embed/editor/uploads/audio) of this customer")
	key, ok := s.assetKey(u)
	if !ok || !ownsKey(owner, key) || keyKind(key) != kindAudio {
		return nil, notOurs
	}
	copied := maps.Clone(audio)
	copied["url"] = s.url(key)
	ld["audio"] = copied
	if slices.Contains(held, key) {
		return &attachment{field: field, key: key}, nil
	}
	a, err := s.resolve(ctx, field, s.url(key), owner, uploadticket.KindAudio)
	if err != nil {
		return nil, err
	}
	o, ok := a.object()
	if !ok {
		return nil, notOurs
	}
	check := func(ctx context.Context) error { return s.verifyObject(ctx, field, a, o) }
	return &attachment{field: field, key: key, ticket: a, size: o.Size, check: check}, nil
}

// imageAttachment resolves the editor PATCH's imageUrl: the thumbnail of one of the customer's
// splat-images uploads, checked like the commit's, or the scene's current image (a no-op).
// *imageURL is rewritten to the stored form.
func (s *Service) imageAttachment(ctx context.Context, owner *ent.ExternalUser, imageURL *string, current string) (*attachment, error) {
	const field = "imageUrl"
	key, ok := s.assetKey(*imageURL)
	if !ok {
		return nil, apperr.Invalid("invalid upload URL", field+": not an upload URL issued by this service")
	}
	*imageURL = s.url(key)
	if cur, ok := s.assetKey(current); ok && cur == key {
		return &attachment{field: field, key: key}, nil
	}
	a, err := s.resolve(ctx, field, *imageURL, owner, uploadticket.KindSplatImages)
	if err != nil {
		return nil, err
	}
	o, ok := a.object()
	if !ok || !strings.HasPrefix(path.Base(o.Key), "thumbnail.") {
		return nil, apperr.Invalid("validation failed", field+": must be the thumbnail fileUrl of a splat-images upload")
	}
	check := func(ctx context.Context) error { return s.verifyObject(ctx, field, a, o) }
	return &attachment{field: field, key: key, ticket: a, size: o.Size, check: check}, nil
}

// planSave works out, before the PATCH's transaction, the uploads an editor save attaches and
// measures what it may release. A scene the customer does not own yields an empty plan: the
// transaction answers its 404.
func (s *Service) planSave(ctx context.Context, owner *ent.ExternalUser, id string, p *scenePatch) (*savePlan, error) {
	plan := &savePlan{sizes: map[string]int64{}}
	if p.imageURL == nil && !p.hasLevelData {
		return plan, nil
	}
	cur, err := s.scenes.OwnedLive(ctx, owner, id)
	if err != nil || cur == nil {
		return plan, err
	}
	if p.imageURL != nil {
		a, err := s.imageAttachment(ctx, owner, p.imageURL, cur.ImageURL)
		if err != nil {
			return nil, err
		}
		plan.imageKey = a.key
		plan.attach = append(plan.attach, *a)
	}
	if p.hasLevelData {
		plan.audio = true
		a, err := s.audioAttachment(ctx, owner, p.levelData, cur.AssetKeys)
		if err != nil {
			return nil, err
		}
		if a != nil {
			plan.audioKey = a.key
			plan.attach = append(plan.attach, *a)
		}
	}
	for _, k := range s.released(plan, cur) {
		if plan.sizes[k], err = s.storedSize(ctx, k); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// released lists the objects of sc the save lets go: the current thumbnail when imageUrl
// names another, and every audio file but the one levelData now names.
func (s *Service) released(plan *savePlan, sc *ent.Scene) []string {
	var out []string
	if plan.imageKey != "" {
		if cur, ok := s.assetKey(sc.ImageURL); ok && cur != plan.imageKey && slices.Contains(sc.AssetKeys, cur) {
			out = append(out, cur)
		}
	}
	if plan.audio {
		for _, k := range sc.AssetKeys {
			if keyKind(k) == kindAudio && k != plan.audioKey && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// storedSize is an object's size in the store; a missing object releases nothing (its bytes
// were never there to free, or a purge already took them).
func (s *Service) storedSize(ctx context.Context, key string) (int64, error) {
	st, found, err := s.bucket().Head(ctx, objectkeys.Sealed(key))
	if err != nil {
		return 0, apperr.Internal(err)
	}
	if !found {
		s.log.Warn("a released scene object is already gone; nothing to release for it", "key", key)
	}
	return st.Size, nil
}

// applySave applies a plan to the locked scene cur inside the PATCH's transaction: release what
// the save lets go, charge what it attaches (413 when the customer or account lacks the room),
// commit the attached tickets to the scene, and write the asset keys, size and image URL. It
// returns the outbox row of the released objects, if any.
func (s *Service) applySave(ctx context.Context, tx *ent.Tx, cur *ent.Scene, up *ent.SceneUpdateOne, owner *ent.ExternalUser,
	accountID string, p *scenePatch, plan *savePlan) (*ent.AssetPurge, error) {
	// The plan was made from an unlocked read. A scene that changed since in a way the plan did
	// not see (it was not live then; an object the plan took as held was let go by another save)
	// is not saved from a stale plan: the editor saves again.
	stale := apperr.Conflict("the scene changed during the save; save again")
	if p.imageURL != nil && plan.imageKey == "" || p.hasLevelData && !plan.audio {
		return nil, stale
	}
	curImage, _ := s.assetKey(cur.ImageURL)
	for _, a := range plan.attach {
		if a.ticket == nil && a.key != curImage && !slices.Contains(cur.AssetKeys, a.key) {
			return nil, stale
		}
	}
	if p.imageURL != nil {
		up.SetImageURL(*p.imageURL)
	}
	released := s.released(plan, cur)
	var freed, charged int64
	for _, k := range released {
		size, ok := plan.sizes[k]
		if !ok {
			// Another save changed the scene between the plan and the lock.
			var err error
			if size, err = s.storedSize(ctx, k); err != nil {
				return nil, err
			}
		}
		freed += size
	}
	keys := slices.DeleteFunc(slices.Clone(cur.AssetKeys), func(k string) bool { return slices.Contains(released, k) })
	// unused are the other objects of an attached ticket (the depth image of a splat-images
	// upload whose thumbnail the save takes): the committed ticket is spent, so the orphan
	// sweep would never take them.
	var unused []string
	for _, a := range plan.attach {
		if a.ticket == nil || slices.Contains(keys, a.key) {
			continue
		}
		if err := scenes.LockUploads(ctx, tx, []string{a.ticket.ticket.ID}); err != nil {
			return nil, apperr.Conflict(a.field + ": this upload is already part of a scene")
		}
		if err := a.check(ctx); err != nil {
			return nil, err
		}
		n, err := tx.UploadTicket.Update().Where(uploadticket.ID(a.ticket.ticket.ID), uploadticket.CommittedAtIsNil()).
			SetCommittedAt(s.now()).SetSceneID(cur.ID).Save(ctx)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, apperr.Conflict(a.field + ": this upload is already part of a scene")
		}
		charged += a.size
		keys = append(keys, a.key)
		for _, o := range a.ticket.ticket.Objects {
			if o.Key != a.key {
				unused = append(unused, o.Key)
			}
		}
	}
	if freed > 0 {
		if err := quota.Release(ctx, tx, cur.OwnerID, accountID, quota.Charge{Bytes: freed}); err != nil {
			return nil, err
		}
	}
	if charged > 0 {
		if _, _, err := quota.Reserve(ctx, tx, cur.OwnerID, accountID, quota.Charge{Bytes: charged}); err != nil {
			return nil, err
		}
	}
	if freed == 0 && charged == 0 && len(released) == 0 && len(keys) == len(cur.AssetKeys) {
		return nil, nil
	}
	up.SetAssetKeys(keys).SetFileSizeBytes(max(0, cur.FileSizeBytes+charged-freed))
	if len(released)+len(unused) == 0 {
		return nil, nil
	}
	purge, err := scenes.UploadPurge(ctx, tx, owner, nil, append(released, unused...))
	if err != nil {
		return nil, fmt.Errorf("recording the purge of a save's released objects: %w", err)
	}
	return purge, nil
}
