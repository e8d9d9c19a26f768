package scene

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
)

// editorPrefix is the editor embed's session-bearer API (docs/embeds.md): the v1 scene, upload
// and clone routes for a session scoped to a customer.
const editorPrefix = "/api/embed/editor"

// registerEditor mounts the editor embed's routes. Each is its v1 handler behind editorScope,
// so a scoped editor session acts exactly as the v1 route with its EU.
func (s *Service) registerEditor(r fiber.Router) {
	r.Patch(editorPrefix+"/splats/:splatId", editorScope, s.patchScene)
	r.Post(editorPrefix+"/uploads/splat-file", editorScope, s.uploadSplatFile)
	r.Get(editorPrefix+"/uploads/splat-file/:uploadId", editorScope, s.getMultipart)
	r.Post(editorPrefix+"/uploads/splat-file/:uploadId/complete", editorScope, s.completeMultipart)
	r.Delete(editorPrefix+"/uploads/splat-file/:uploadId", editorScope, s.abortMultipart)
	r.Post(editorPrefix+"/uploads/lod-folder", editorScope, s.uploadLODFolder)
	r.Post(editorPrefix+"/uploads/splat-images", editorScope, s.uploadSplatImages)
	r.Post(editorPrefix+"/uploads/audio", editorScope, s.uploadAudio)
	r.Post(editorPrefix+"/splats", editorScope, s.commit)
	r.Post(editorPrefix+"/splats/:splatId/clone", editorScope, s.clone)
	r.Get(editorPrefix+"/splats/:splatId/clone/:jobId", editorScope, s.pollClone)
}

// editorScope admits an editor session scoped to a customer to the v1 handler behind it. A
// viewer session may not edit (403); a guest editor session (no EU) is read-only for cloud
// actions and gets the 403 AUTH_REQUIRED the editor turns into its authRequired event. The
// capabilities and the customer's status are those the gateway found at this request, not at
// mint: an integration that lost the editor capability, or a customer made inactive, loses the
// right to save and publish at once (403). Uploads, commits and clones of an inactive customer
// reach the v1 handlers, which refuse them with the spec's 401 from the customer's live row;
// reading (a clone's progress) stays allowed.
func editorScope(c *fiber.Ctx) error {
	caller := httpx.CallerOf(c)
	if caller == nil || !caller.IsSession() {
		return apperr.Unauthorized("missing or invalid session token")
	}
	if !slices.Contains(caller.Capabilities, httpx.CapabilityEditor) {
		return apperr.Forbidden("this session is not an editor session")
	}
	if !caller.HasExternalUser {
		return apperr.Forbidden("sign in to save, upload or publish: this guest session is read-only").
			With("code", "AUTH_REQUIRED")
	}
	if caller.CustomerInactive() && c.Method() == fiber.MethodPatch {
		return apperr.Forbidden("this customer is inactive: the session may view, not save or publish")
	}
	httpx.AdmitSessionAsKey(c)
	return c.Next()
}

// Bounds of a scene's levelData (docs/embeds.md): 256 KiB serialized, and a nesting depth no
// viewer state needs but that keeps Postgres' jsonb parser (recursive) far from its limits.
const (
	maxLevelData      = 256 << 10
	maxLevelDataDepth = 64
)

// parseLevelData reads the optional levelData field of an editor body: a JSON object or null,
// at most 256 KiB serialized, valid as version 1 (leveldata.go). set says the field was sent; nil with set true clears it.
// NUL, which a jsonb column refuses, never gets here: httpx.DecodeObject refuses it in any body.
func parseLevelData(f *httpx.Fields) (value map[string]any, set bool) {
	raw, ok := f.Raw("levelData")
	if !ok {
		return nil, false
	}
	if f.IsNull("levelData") {
		return nil, true
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		f.Issuef("levelData: must be a JSON object or null")
		return nil, false
	}
	if compact.Len() > maxLevelData {
		f.Issuef("levelData: must be at most %d bytes serialized, got %d", maxLevelData, compact.Len())
		return nil, false
	}
	if compact.Len() == 0 || compact.Bytes()[0] != '{' {
		f.Issuef("levelData: must be a JSON object or null")
		return nil, false
	}
	if err := json.Unmarshal(compact.Bytes(), &value); err != nil {
		// A number out of float64 range: stored, it could never be read back. The decoder
		// refuses those first, naming the place (httpx.NumberIssues); this stays as the guard.
		f.Issuef("levelData: numbers must be finite doubles")
		return nil, false
	}
	if problem := levelDataProblem(value, 1); problem != "" {
		f.Issuef("levelData: %s", problem)
		return nil, false
	}
	if issues := levelDataIssues(value); len(issues) > 0 {
		for _, issue := range issues {
			f.Issuef("%s", issue)
		}
		return nil, false
	}
	return value, true
}

// levelDataProblem walks a decoded levelData for what JSON allows but the jsonb column's
// recursive parser should not be given: nesting deeper than maxLevelDataDepth.
func levelDataProblem(v any, depth int) string {
	switch v.(type) {
	case []any, map[string]any:
		if depth > maxLevelDataDepth {
			return "must not nest objects and arrays deeper than 64 levels"
		}
	}
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if p := levelDataProblem(e, depth+1); p != "" {
				return p
			}
		}
	case map[string]any:
		for _, e := range v {
			if p := levelDataProblem(e, depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}
