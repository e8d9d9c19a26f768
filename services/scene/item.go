package scene

import (
	"maps"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	splathost "github.com/splathost/splathost/sdk/go"
)

// The wire shapes of a scene are the Go SDK's types (sdk/go), which api/sdk_types_test.go holds
// to api/openapi.yaml: the service renders into the very structs its clients decode, so the
// two cannot drift apart. The list item is splathost.Splat with its two fetch-only fields
// left empty (they are omitempty there); the single-scene fetch is splatDetail.

// renderProcessing renders the rendition of sc; its URL follows the scene's asset rules like
// splatUrl (stable for a scene open to all, signed otherwise), and only a ready rendition has
// one.
func renderProcessing(urls *AssetURLs, sc *ent.Scene) splathost.Processing {
	p := splathost.Processing{State: string(sc.ProcessingState), Gaussians: sc.Gaussians, Message: sc.ProcessingMessage}
	if sc.ProcessingState == entscene.ProcessingStateReady && sc.RenditionKey != nil && sc.RenditionType != nil {
		u := urls.OfKey(sc, *sc.RenditionKey)
		t := string(*sc.RenditionType)
		p.RenditionURL, p.RenditionType, p.RenditionBytes = &u, &t, sc.RenditionBytes
	}
	return p
}

// splatDetail is the single-scene fetch: the item plus levelData and lodFolderKey, always
// present (null when unset). These fields hide the embedded Splat's omitempty ones of the same
// names, as encoding/json lets a shallower field do.
type splatDetail struct {
	splathost.Splat
	LevelData    map[string]any `json:"levelData"`
	LodFolderKey *string        `json:"lodFolderKey"`
}

// itemOf renders a scene. ownerEU is the owner's external user id; callerEU is the caller's
// (empty for an integration-level caller, who owns nothing personally).
func (s *Service) itemOf(sc *ent.Scene, ownerEU, productSlug, callerEU string) splathost.Splat {
	return renderItem(s.urls, sc, ownerEU, productSlug, callerEU)
}

// renderItem renders a scene with its asset URLs as urls gives them (assets.go): stable
// asset-route URLs for a scene open to everyone, signed ones otherwise.
func renderItem(urls *AssetURLs, sc *ent.Scene, ownerEU, productSlug, callerEU string) splathost.Splat {
	return splathost.Splat{
		ID: sc.ID, Title: sc.Title, Description: sc.Description, ImageURL: urls.Of(sc, sc.ImageURL), SplatURL: urls.Of(sc, sc.SplatURL),
		Visibility: splathost.Visibility(sc.Visibility), AllowEmbed: sc.AllowEmbed, AllowComments: sc.AllowComments,
		// The stored record and the wire type have the same fields: the conversion stops
		// compiling if either changes alone.
		AllowReactions: sc.AllowReactions, AllowClone: sc.AllowClone, RemixedFrom: (*splathost.RemixedFrom)(sc.RemixedFrom),
		SplatType: splathost.SplatType(sc.SplatType), ExternalUserID: ownerEU, ProductSlug: productSlug,
		IsOwner: callerEU != "" && callerEU == ownerEU, ViewCount: sc.ViewCount, LikeCount: sc.LikeCount,
		FileSizeBytes: sc.FileSizeBytes, Featured: sc.Featured, FeaturedAt: httpx.ISOTimePtr(sc.FeaturedAt),
		CreatedAt: httpx.ISOTime(sc.CreatedAt), UpdatedAt: httpx.ISOTime(sc.UpdatedAt),
		Processing: renderProcessing(urls, sc),
	}
}

// detailOf renders a single-scene fetch.
func (s *Service) detailOf(sc *ent.Scene, ownerEU, productSlug, callerEU string) splatDetail {
	return renderDetail(s.urls, sc, ownerEU, productSlug, callerEU)
}

func renderDetail(urls *AssetURLs, sc *ent.Scene, ownerEU, productSlug, callerEU string) splatDetail {
	return splatDetail{Splat: renderItem(urls, sc, ownerEU, productSlug, callerEU), LevelData: renderLevelData(urls, sc),
		LodFolderKey: sc.LodFolderKey}
}

// renderLevelData renders levelData with its audio URL as urls gives asset URLs (the stored
// form is not readable by a browser; contract item 9). The row, shared through the scene cache,
// is never modified.
func renderLevelData(urls *AssetURLs, sc *ent.Scene) map[string]any {
	audio, u := levelAudio(sc.LevelData)
	if audio == nil || u == "" {
		return sc.LevelData
	}
	out := maps.Clone(sc.LevelData)
	a := maps.Clone(audio)
	a["url"] = urls.Of(sc, u)
	out["audio"] = a
	return out
}

// Detail renders a scene, loaded with its owner edge, as the single-scene fetch, with its asset
// URLs from urls. The session service serves embed reads with it, so an embed sees the same
// shape as the REST API.
func Detail(urls *AssetURLs, sc *ent.Scene, productSlug, callerEU string) any {
	return renderDetail(urls, sc, ownerEUOf(sc), productSlug, callerEU)
}

// WebhookRenderer renders scenes for webhook events (splat.created, updated, published, ready)
// as the list item an integration-level caller gets: isOwner false, asset URLs from urls.
func WebhookRenderer(urls *AssetURLs) events.Renderer {
	return func(sc *ent.Scene, ownerEU, productSlug string) any {
		return renderItem(urls, sc, ownerEU, productSlug, "")
	}
}
