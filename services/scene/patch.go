package scene

import (
	"context"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/scenes"
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

// updateScene applies a checked PATCH of owner's scene id (scenes.Store.Update), with the
// attached uploads of an editor save (plan) under the same lock; after the commit it starts a
// replaced thumbnail's purge and drops the scene's cached copies.
func (s *Service) updateScene(ctx context.Context, accountID string, owner *ent.ExternalUser, id string, p *scenePatch, plan *savePlan) (*ent.Scene, error) {
	sc, purge, err := s.scenes.Update(ctx, accountID, owner, id, p.edit(),
		func(ctx context.Context, tx *ent.Tx, cur *ent.Scene, up *ent.SceneUpdateOne) (*ent.AssetPurge, error) {
			return s.applySave(ctx, tx, cur, up, owner, accountID, p, plan)
		})
	if err != nil {
		return nil, err
	}
	s.startAssetPurge(ctx, purge)
	s.invalidateScene(ctx, owner.IntegrationID, id)
	return sc, nil
}

// edit is the PATCH's change of the scene's own fields.
func (p *scenePatch) edit() *scenes.Edit {
	e := &scenes.Edit{Title: p.title, Description: p.description, AllowEmbed: p.allowEmbed, AllowClone: p.allowClone,
		AllowComments: p.allowComments, AllowReactions: p.allowReactions, LevelData: p.levelData, HasLevelData: p.hasLevelData}
	if p.visibility != nil {
		v := scene.Visibility(*p.visibility)
		e.Visibility = &v
	}
	return e
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
