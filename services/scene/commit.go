package scene

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/scenerow"
	"github.com/splathost/splathost/internal/scenes"
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

// commit handles POST /api/v1/splats and the editor's commit: the body's rules, the uploads it
// names (planCommit), the scene with its charge and events (createScene), the 201.
func (s *Service) commit(c *fiber.Ctx) error {
	parse := func(body []byte, caller *httpx.Caller) (*commitRequest, error) {
		return parseCommit(body, caller.IsSession())
	}
	req, call, err := customerBody(s, c, parse, (*Service).committer)
	if err != nil {
		return err
	}
	ctx, caller, eu, owner := c.UserContext(), call.caller, call.eu, call.owner
	plan, err := s.planCommit(ctx, req, owner)
	if err != nil {
		return err
	}
	answer := func(sc *ent.Scene, acct *ent.Account) any {
		return fiber.Map{"status": "success", "splatId": sc.ID,
			"splat": s.itemOf(sc, owner.ExternalUserID, caller.ProductSlug, eu), "usage": quota.AccountSnapshot(acct)}
	}
	out, err := s.createScene(ctx, caller.AccountID, owner, req, plan, answer)
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, out)
}

// createScene makes the committed scene of owner from its checked plan (scenes.Store.Create),
// then starts the purge the commit wrote (a refused commit's uploads, or the unused image of a
// spent ticket) and drops the cached list pages.
func (s *Service) createScene(ctx context.Context, accountID string, owner *ent.ExternalUser, req *commitRequest, p *commitPlan,
	answer func(*ent.Scene, *ent.Account) any) (*idempotency.Recorded, error) {
	row := scenerow.New{IntegrationID: owner.IntegrationID, OwnerID: owner.ID, Title: req.title,
		Description: req.description, Visibility: scene.Visibility(req.visibility), SplatType: req.splatType,
		SplatURL: req.splatURL, LodFolderKey: p.lodKey, LodFiles: p.lodFiles, ImageURL: req.imageURL,
		InitialCameraPosition: req.cameraPosition, InitialCameraRotation: req.cameraRotation,
		// With no camera in levelData, the commit's initial camera becomes its start camera.
		LevelData:     seedCamera(req.levelData, req.cameraPosition, req.cameraRotation),
		FileSizeBytes: p.size, AssetKeys: p.keys}
	if req.depthURL != "" {
		row.ThumbnailDepthURL = &req.depthURL
	}
	out, sc, purge, err := s.scenes.Create(ctx, scenes.NewScene{Owner: owner, AccountID: accountID, Row: row,
		Tickets: ticketIDs(p.assets), Checks: p.checks, Unused: p.unused}, answer)
	s.startAssetPurge(ctx, purge)
	if err != nil {
		return nil, err
	}
	s.invalidateScene(ctx, owner.IntegrationID, sc.ID)
	return out, nil
}
