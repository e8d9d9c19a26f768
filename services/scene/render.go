package scene

import (
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/scenes"
	splathost "github.com/splathost/splathost/sdk/go"
)

// itemOf renders a scene as a list item with this service's asset URLs (scenes.RenderItem).
// ownerEU is the owner's external user id; callerEU is the caller's (empty for an
// integration-level caller, who owns nothing personally).
func (s *Service) itemOf(sc *ent.Scene, ownerEU, productSlug, callerEU string) splathost.Splat {
	return scenes.RenderItem(s.urls, sc, ownerEU, productSlug, callerEU)
}

// detailOf renders a single-scene fetch (scenes.RenderDetail).
func (s *Service) detailOf(sc *ent.Scene, ownerEU, productSlug, callerEU string) scenes.Detail {
	return scenes.RenderDetail(s.urls, sc, ownerEU, productSlug, callerEU)
}
