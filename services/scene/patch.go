package scene

import (
	"context"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/roomproto"
)

// scenePatch is a validated PATCH body; nil fields are omitted (untouched).
type scenePatch struct {
	title          *string
	description    *string
	visibility     *string
	allowEmbed     *bool
	allowClone     *bool
	allowComments  *bool
	allowReactions *bool
	// featured is set only for a featuring request, which has no other field.
	featured *bool
	// levelData (editor embed only) replaces the scene's viewer state when hasLevelData; nil
	// clears it.
	levelData    map[string]any
	hasLevelData bool
	// imageURL (editor embed only) is a thumbnail upload to attach (attach.go).
	imageURL *string
}

// patchFields are the fields PATCH accepts.
var patchFields = []string{"title", "description", "visibility", "allowEmbed", "allowClone", "allowComments",
	"allowReactions", "featured"}

// editorPatchFields are the fields the editor embed's PATCH accepts: the v1 ones but featured
// (integration-level curation, never a session's), plus levelData and imageUrl (the thumbnail
// the editor captures on first save).
var editorPatchFields = append(slices.DeleteFunc(slices.Clone(patchFields), func(f string) bool { return f == "featured" }),
	"levelData", "imageUrl")

// parseScenePatch applies the PATCH rules (spec; contract item 6): at least one field, title
// trimmed to 1-200 characters, description up to 2000 ("" clears it), visibility private or
// public, the allow* flags booleans, and featured only on its own. null is not a value of any
// field. The editor embed's PATCH (editor) refuses featured with a 403 and accepts levelData
// (an object, or null to clear it).
func parseScenePatch(body []byte, editor bool) (*scenePatch, error) {
	f, err := httpx.DecodeObject(body, true)
	if err != nil {
		return nil, err
	}
	fields := patchFields
	if editor {
		fields = editorPatchFields
		if f.Has("featured") {
			return nil, apperr.Forbidden("featured is integration-level curation: set it with the REST API, not from an embed session")
		}
	}
	if f.Len() == 0 {
		return nil, apperr.Invalid("no updatable field", "body: at least one of "+strings.Join(fields, ", ")+" is required")
	}
	f.Only(fields...)
	for _, name := range patchFields {
		f.NotNull(name)
	}
	p := &scenePatch{}
	if editor {
		p.levelData, p.hasLevelData = parseLevelData(f)
		f.NotNull("imageUrl")
		if u, ok := f.String("imageUrl", 1, 4096); ok {
			p.imageURL = &u
		}
	}
	if f.Has("featured") && f.Len() > 1 {
		f.Issuef("featured: must be the only field in the body; send metadata changes in a separate request")
	}
	if t, ok := f.String("title", 1, 1<<20); ok {
		t = strings.TrimSpace(t)
		if n := len([]rune(t)); n < 1 || n > maxTitle {
			f.Issuef("title: must be 1-%d characters after trimming", maxTitle)
		} else {
			p.title = &t
		}
	}
	if d, ok := f.String("description", 0, maxDescription); ok {
		p.description = &d
	}
	if v, ok := f.Enum("visibility", "private", "public"); ok {
		p.visibility = &v
	}
	for _, b := range []struct {
		name string
		dst  **bool
	}{{"allowEmbed", &p.allowEmbed}, {"allowClone", &p.allowClone}, {"allowComments", &p.allowComments},
		{"allowReactions", &p.allowReactions}, {"featured", &p.featured}} {
		if v, ok := f.Bool(b.name); ok {
			*b.dst = &v
		}
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// patchScene answers PATCH /api/v1/splats/{id}: featuring (integration-level) or a metadata
// update by the owning customer.
func (s *Service) patchScene(c *fiber.Ctx) error {
	caller, err := httpx.KeyCaller(c)
	if err != nil {
		return err
	}
	id, err := SceneIDParam(c)
	if err != nil {
		return err
	}
	p, err := parseScenePatch(c.Body(), caller.IsSession())
	if err != nil {
		return err
	}
	if p.featured != nil {
		return s.feature(c, caller, id, *p.featured)
	}
	eu, err := caller.RequireExternalUser()
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	owner, err := s.sceneOwner(ctx, caller, eu)
	if err != nil {
		return err
	}
	plan, err := s.planSave(ctx, owner, id, p)
	if err != nil {
		return err
	}
	sc, err := s.updateScene(ctx, caller.AccountID, owner, id, p, plan)
	if err != nil {
		return err
	}
	if caller.IsSession() {
		// The editor reloads its state from the answer: the single-scene shape, with levelData.
		return c.JSON(fiber.Map{"status": "success", "splat": s.detailOf(sc, eu, caller.ProductSlug, eu)})
	}
	return c.JSON(fiber.Map{"status": "success", "splat": s.itemOf(sc, eu, caller.ProductSlug, eu)})
}

// updateScene applies a checked PATCH of owner's scene id in one transaction: the row lock,
// the attached uploads of an editor save (plan), the fields, a clone's first publish (its slot
// and caps), the webhook events and the change notice; after the commit it starts the events'
// deliveries and a replaced thumbnail's purge.
func (s *Service) updateScene(ctx context.Context, accountID string, owner *ent.ExternalUser, id string, p *scenePatch, plan *savePlan) (*ent.Scene, error) {
	var sc *ent.Scene
	var purge *ent.AssetPurge
	var hooks events.Batch
	err := s.db.InTx(ctx, func(tx *ent.Tx) error {
		// Lock order: the scene row, then (attached uploads, first publish of a clone) the
		// customer and account rows — the same order DELETE takes.
		cur, err := lockOwnedScene(ctx, tx, owner.IntegrationID, owner.ID, id)
		if err != nil {
			return err
		}
		up := cur.Update()
		if purge, err = s.applySave(ctx, tx, cur, up, owner, accountID, p, plan); err != nil {
			return err
		}
		p.apply(cur, up)
		if p.visibility != nil && *p.visibility == "public" && cur.FirstPublishedAt == nil {
			if err := firstPublish(ctx, tx, cur, accountID, up); err != nil {
				return err
			}
			up.SetFirstPublishedAt(s.now())
		}
		if sc, err = up.Save(ctx); err != nil {
			return err
		}
		if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatUpdated, sc, owner.ExternalUserID); err != nil {
			return err
		}
		// Published: the scene became public (spec, Scene visibility: PATCH visibility 'public').
		if cur.Visibility != scene.VisibilityPublic && sc.Visibility == scene.VisibilityPublic {
			if err := s.events.EmitSplat(ctx, tx, &hooks, events.SplatPublished, sc, owner.ExternalUserID); err != nil {
				return err
			}
		}
		// The scene's multiplayer room learns of the save from here, never from a client: its
		// draft is cleared and its participants get the stored scene, once this commits.
		if p.changesRoom() {
			q, args := roomproto.SceneSaved(owner.IntegrationID, id)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		return sceneChanged(ctx, tx, owner.IntegrationID, id)
	})
	if err != nil {
		return nil, err
	}
	s.events.Flush(ctx, &hooks)
	s.startAssetPurge(ctx, purge)
	s.invalidateScene(ctx, owner.IntegrationID, id)
	return sc, nil
}

// changesRoom reports whether the PATCH writes a field the multiplayer room edits (a save or a
// publish); a thumbnail alone (imageUrl) or allowEmbed/allowClone leave the room's draft as it is.
func (p *scenePatch) changesRoom() bool {
	return p.title != nil || p.description != nil || p.visibility != nil || p.allowComments != nil ||
		p.allowReactions != nil || p.hasLevelData
}

// apply sets the PATCH's plain fields on up, and takes a featured scene off the curated set
// when the PATCH makes it private or non-embeddable.
func (p *scenePatch) apply(cur *ent.Scene, up *ent.SceneUpdateOne) {
	if p.title != nil {
		up.SetTitle(*p.title)
	}
	if p.description != nil {
		up.SetDescription(*p.description)
	}
	if p.allowClone != nil {
		up.SetAllowClone(*p.allowClone)
	}
	if p.allowComments != nil {
		up.SetAllowComments(*p.allowComments)
	}
	if p.allowReactions != nil {
		up.SetAllowReactions(*p.allowReactions)
	}
	if p.allowEmbed != nil {
		up.SetAllowEmbed(*p.allowEmbed)
	}
	if p.visibility != nil {
		up.SetVisibility(scene.Visibility(*p.visibility))
	}
	if p.hasLevelData && p.levelData == nil {
		up.ClearLevelData()
	} else if p.hasLevelData {
		up.SetLevelData(p.levelData)
	}
	// A featured scene must stay featurable: making it private or non-embeddable takes it off
	// the curated set (featuring it again needs a new PATCH featured true, which keeps the
	// original featuredAt). Otherwise a private scene could be served from the featured list.
	if cur.Featured && (p.visibility != nil && *p.visibility == "private" || p.allowEmbed != nil && !*p.allowEmbed) {
		up.SetFeatured(false)
	}
}

// firstPublish applies the spec's first publish of a clone: a clone holds no scene slot until it
// is first made public, and then re-checks the scene caps (customer and account maxSplats) and
// storage and consumes a slot for good (making it private again does not free it). Any other
// scene already holds its slot; its first publish only records first_published_at.
func firstPublish(ctx context.Context, tx *ent.Tx, sc *ent.Scene, accountID string, up *ent.SceneUpdateOne) error {
	if sc.ClonedFromID == nil || sc.HoldsSplatSlot {
		return nil
	}
	// A clone's bytes were charged when it was copied, so storage is re-checked with nothing
	// extra: the customer (and, without overage, the account) must not be over its allocation.
	u, a, err := quota.Reserve(ctx, tx, sc.OwnerID, accountID, quota.Charge{Slot: true})
	if err != nil {
		return err
	}
	if u.UsedBytes > u.LimitBytes {
		return quota.StorageExceeded("customer", u.UsedBytes, u.LimitBytes, sc.FileSizeBytes)
	}
	if !a.Overage && a.UsedBytes > a.StorageBundleBytes {
		return quota.StorageExceeded("account", a.UsedBytes, a.StorageBundleBytes, sc.FileSizeBytes)
	}
	up.SetHoldsSplatSlot(true)
	return nil
}

// feature sets or clears the integration-level curation flag. It needs only the keys: EU is
// ignored for scoping, and any live scene of the integration qualifies.
func (s *Service) feature(c *fiber.Ctx, caller *httpx.Caller, id string, featured bool) error {
	ctx := c.UserContext()
	sc, err := s.scenes.Feature(ctx, caller.IntegrationID, id, featured)
	if err != nil {
		return err
	}
	s.invalidateScene(ctx, caller.IntegrationID, id)
	ownerEU, err := s.scenes.OwnerEU(ctx, sc.OwnerID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "splat": s.itemOf(sc, ownerEU, caller.ProductSlug, callerEU(caller))})
}
