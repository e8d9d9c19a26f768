package scenes

import (
	"maps"
	"time"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/events"
	splathost "github.com/splathost/splathost/sdk/go"
)

// The wire shapes of a scene are the Go SDK's types (sdk/go), which api/sdk_types_test.go holds
// to api/openapi.yaml: the services render into the very structs their clients decode, so the
// two cannot drift apart. The list item is splathost.Splat with its two fetch-only fields
// left empty (they are omitempty there); the single-scene fetch is Detail.

// RenderProcessing renders the rendition of sc; its URL follows the scene's asset rules like
// splatUrl (stable for a scene open to all, signed otherwise), and only a ready rendition has
// one.
func RenderProcessing(urls *AssetURLs, sc *ent.Scene) splathost.Processing {
	p := splathost.Processing{State: string(sc.ProcessingState), Gaussians: sc.Gaussians, Message: sc.ProcessingMessage}
	if sc.ProcessingState == entscene.ProcessingStateReady && sc.RenditionKey != nil && sc.RenditionType != nil {
		u := urls.OfKey(sc, *sc.RenditionKey)
		t := string(*sc.RenditionType)
		p.RenditionURL, p.RenditionType, p.RenditionBytes = &u, &t, sc.RenditionBytes
	}
	return p
}

// Detail is the single-scene fetch: the item plus levelData and lodFolderKey, always
// present (null when unset). These fields hide the embedded Splat's omitempty ones of the same
// names, as encoding/json lets a shallower field do.
type Detail struct {
	splathost.Splat
	LevelData    map[string]any `json:"levelData"`
	LodFolderKey *string        `json:"lodFolderKey"`
}

// RenderItem renders a scene with its asset URLs as urls gives them (AssetURLs.Of): stable
// asset-route URLs for a scene open to everyone, signed ones otherwise. ownerEU is the owner's
// external user id; callerEU is the caller's (empty for an integration-level caller, who owns
// nothing personally).
func RenderItem(urls *AssetURLs, sc *ent.Scene, ownerEU, productSlug, callerEU string) splathost.Splat {
	return splathost.Splat{
		ID: sc.ID, Title: sc.Title, Description: sc.Description, ImageURL: urls.Of(sc, sc.ImageURL), SplatURL: urls.Of(sc, sc.SplatURL),
		Visibility: splathost.Visibility(sc.Visibility), AllowEmbed: sc.AllowEmbed, AllowComments: sc.AllowComments,
		// The stored record and the wire type have the same fields: the conversion stops
		// compiling if either changes alone.
		AllowReactions: sc.AllowReactions, AllowClone: sc.AllowClone, RemixedFrom: (*splathost.RemixedFrom)(sc.RemixedFrom),
		SplatType: splathost.SplatType(sc.SplatType), ExternalUserID: ownerEU, ProductSlug: productSlug,
		IsOwner: callerEU != "" && callerEU == ownerEU, ViewCount: sc.ViewCount, LikeCount: sc.LikeCount,
		FileSizeBytes: sc.FileSizeBytes, Featured: sc.Featured, FeaturedAt: isoTimePtr(sc.FeaturedAt),
		CreatedAt: isoTime(sc.CreatedAt), UpdatedAt: isoTime(sc.UpdatedAt),
		Processing: RenderProcessing(urls, sc),
	}
}

// RenderDetail renders a single-scene fetch (see RenderItem for the arguments).
func RenderDetail(urls *AssetURLs, sc *ent.Scene, ownerEU, productSlug, callerEU string) Detail {
	return Detail{Splat: RenderItem(urls, sc, ownerEU, productSlug, callerEU), LevelData: RenderLevelData(urls, sc),
		LodFolderKey: sc.LodFolderKey}
}

// DetailOf renders a scene, loaded with its owner edge, as the single-scene fetch. The session
// service serves embed reads and room saves with it, so an embed sees the same shape as the
// REST API.
func DetailOf(urls *AssetURLs, sc *ent.Scene, productSlug, callerEU string) Detail {
	return RenderDetail(urls, sc, OwnerEU(sc), productSlug, callerEU)
}

// OwnerEU is the eager-loaded owner's external user id ("" without the edge).
func OwnerEU(sc *ent.Scene) string {
	if sc.Edges.Owner == nil {
		return ""
	}
	return sc.Edges.Owner.ExternalUserID
}

// RenderLevelData renders levelData with its audio URL as urls gives asset URLs (the stored
// form is not readable by a browser; contract item 9). The row, shared through the scene cache,
// is never modified.
func RenderLevelData(urls *AssetURLs, sc *ent.Scene) map[string]any {
	audio, u := LevelAudio(sc.LevelData)
	if audio == nil || u == "" {
		return sc.LevelData
	}
	out := maps.Clone(sc.LevelData)
	a := maps.Clone(audio)
	a["url"] = urls.Of(sc, u)
	out["audio"] = a
	return out
}

// LevelAudio returns levelData.audio (validated as v1, so an object with a string url).
func LevelAudio(ld map[string]any) (map[string]any, string) {
	audio, _ := ld["audio"].(map[string]any)
	if audio == nil {
		return nil, ""
	}
	u, _ := audio["url"].(string)
	return audio, u
}

// WebhookRenderer renders scenes for webhook events (splat.created, updated, published, ready)
// as the list item an integration-level caller gets: isOwner false, asset URLs from urls.
func WebhookRenderer(urls *AssetURLs) events.Renderer {
	return func(sc *ent.Scene, ownerEU, productSlug string) any {
		return RenderItem(urls, sc, ownerEU, productSlug, "")
	}
}

// isoLayout is the API's timestamp form, httpx.ISOTime's: kept here as well because httpx is
// the Fiber layer this package stays below.
const isoLayout = "2006-01-02T15:04:05.000Z"

func isoTime(t time.Time) string { return t.UTC().Format(isoLayout) }

func isoTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := isoTime(*t)
	return &s
}
