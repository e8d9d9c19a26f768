package scene

import (
	"maps"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
)

// splatItem is the interface's list-item shape of a scene (spec, "splat").
type splatItem struct {
	ID             string              `json:"id"`
	Title          string              `json:"title"`
	Description    string              `json:"description"`
	ImageURL       string              `json:"imageUrl"`
	SplatURL       string              `json:"splatUrl"`
	Visibility     string              `json:"visibility"`
	AllowEmbed     bool                `json:"allowEmbed"`
	AllowComments  bool                `json:"allowComments"`
	AllowReactions bool                `json:"allowReactions"`
	AllowClone     bool                `json:"allowClone"`
	RemixedFrom    *schema.RemixedFrom `json:"remixedFrom"`
	SplatType      string              `json:"splatType"`
	ExternalUserID string              `json:"externalUserId"`
	ProductSlug    string              `json:"productSlug"`
	IsOwner        bool                `json:"isOwner"`
	ViewCount      int64               `json:"viewCount"`
	LikeCount      int64               `json:"likeCount"`
	FileSizeBytes  int64               `json:"fileSizeBytes"`
	Featured       bool                `json:"featured"`
	FeaturedAt     *string             `json:"featuredAt"`
	CreatedAt      string              `json:"createdAt"`
	UpdatedAt      string              `json:"updatedAt"`
	Processing     processing          `json:"processing"`
}

// processing is where a scene's rendition stands (contract item 15). message is this service's
// addition: why a rendition failed or was skipped, null otherwise.
type processing struct {
	State          string  `json:"state"`
	RenditionURL   *string `json:"renditionUrl"`
	RenditionType  *string `json:"renditionType"`
	RenditionBytes *int64  `json:"renditionBytes"`
	Gaussians      *int64  `json:"gaussians"`
	Message        *string `json:"message"`
}

// renderProcessing renders the rendition of sc; its URL follows the scene's asset rules like
// splatUrl (stable for a scene open to all, signed otherwise), and only a ready rendition has
// one.
func renderProcessing(urls *AssetURLs, sc *ent.Scene) processing {
	p := processing{State: string(sc.ProcessingState), Gaussians: sc.Gaussians, Message: sc.ProcessingMessage}
	if sc.ProcessingState == entscene.ProcessingStateReady && sc.RenditionKey != nil && sc.RenditionType != nil {
		u := urls.OfKey(sc, *sc.RenditionKey)
		t := string(*sc.RenditionType)
		p.RenditionURL, p.RenditionType, p.RenditionBytes = &u, &t, sc.RenditionBytes
	}
	return p
}

// splatDetail is the single-scene fetch: the item plus levelData and lodFolderKey.
type splatDetail struct {
	splatItem
	LevelData    map[string]any `json:"levelData"`
	LodFolderKey *string        `json:"lodFolderKey"`
}

// itemOf renders a scene. ownerEU is the owner's external user id; callerEU is the caller's
// (empty for an integration-level caller, who owns nothing personally).
func (s *Service) itemOf(sc *ent.Scene, ownerEU, productSlug, callerEU string) splatItem {
	return renderItem(s.urls, sc, ownerEU, productSlug, callerEU)
}

// renderItem renders a scene with its asset URLs as urls gives them (assets.go): stable
// asset-route URLs for a scene open to everyone, signed ones otherwise.
func renderItem(urls *AssetURLs, sc *ent.Scene, ownerEU, productSlug, callerEU string) splatItem {
	return splatItem{
		ID: sc.ID, Title: sc.Title, Description: sc.Description, ImageURL: urls.Of(sc, sc.ImageURL), SplatURL: urls.Of(sc, sc.SplatURL),
		Visibility: string(sc.Visibility), AllowEmbed: sc.AllowEmbed, AllowComments: sc.AllowComments,
		AllowReactions: sc.AllowReactions, AllowClone: sc.AllowClone, RemixedFrom: sc.RemixedFrom,
		SplatType: string(sc.SplatType), ExternalUserID: ownerEU, ProductSlug: productSlug,
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
	return splatDetail{splatItem: renderItem(urls, sc, ownerEU, productSlug, callerEU), LevelData: renderLevelData(urls, sc),
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
