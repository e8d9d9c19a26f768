package objectkeys

import (
	"slices"
	"strings"
)

// SafeKey accepts a key of the scene key space: i/<integration>/…, with no empty or dot
// segments.
func SafeKey(k string) bool {
	parts := strings.Split(k, "/")
	if len(parts) < 3 || parts[0] != "i" {
		return false
	}
	for _, s := range parts {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// SafePrefix accepts a folder at least four levels down the scene key space (a customer's
// objects, i/<integration>/u/<customer>/, or narrower), ending in a slash so that it never
// matches a sibling whose name merely starts the same.
func SafePrefix(p string) bool {
	body, ok := strings.CutSuffix(p, "/")
	return ok && SafeKey(body) && strings.Count(body, "/") >= 3
}

// SceneObjects lists a scene's stored objects, as its DELETE, the customer purge and the
// retention purge remove them: every asset key and its sealed copy, the LOD folder of a LOD scene and the scene's
// rendition folder; nothing outside the scene's integration, whatever the row says, and never a
// folder that would widen into a listing of more than the scene's own objects (DeleteObjects
// refuses those too). It takes the scene row's fields (integration, assetKeys, lodFolderKey,
// renditionPrefix; nil when unset) so that this package stays free of the store.
func SceneObjects(integrationID string, assetKeys []string, lodFolder, renditionFolder *string) (keys, prefixes []string) {
	scope := Integration(integrationID)
	// Both the upload keys (a PUT after the commit may have recreated them) and the sealed
	// copies every reader uses.
	for _, k := range WithSealed(assetKeys...) {
		if strings.HasPrefix(k, scope) && SafeKey(k) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	folder := func(f string) {
		if strings.HasPrefix(f, scope) && SafePrefix(f) && !slices.Contains(prefixes, f) {
			prefixes = append(prefixes, f)
		}
	}
	if lodFolder != nil {
		for _, f := range WithSealed(strings.TrimSuffix(*lodFolder, "/") + "/") {
			folder(f)
		}
	}
	if renditionFolder != nil {
		folder(*renditionFolder)
	}
	return keys, prefixes
}
