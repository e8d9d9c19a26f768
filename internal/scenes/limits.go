package scenes

import (
	"time"

	"github.com/splathost/splathost/internal/routes"
)

// Scene metadata limits in characters (spec, Limits). The multiplayer room bounds a draft's
// fields by them too, since a longer one could never be saved.
const (
	MaxTitle       = 200
	MaxDescription = 2000
)

// The asset route's timings. The route is the scene service's (services/scene, assets.go); the
// signer (AssetURLs) and the e2e tests read them too.
const (
	// AssetsPrefix is the path prefix of the asset route on the gateway origin.
	AssetsPrefix = routes.Assets
	// AssetMaxAge is the max-age of asset answers, in seconds. With the decision caches
	// (AssetDecisionTTL) an archive or delete stops every cache within 60 s.
	AssetMaxAge = 30
	// AssetDecisionTTL bounds how long a decision that depends on a row the serving process is
	// not notified about (the integration's revocation) is reused.
	AssetDecisionTTL = 15 * time.Second
	// AssetURLLifetime is the least time a signed asset URL of an API answer stays valid
	// (contract item 9 asks for 15 minutes); expiries are rounded up to assetURLStep so that
	// answers within one step carry identical, browser-cacheable URLs.
	AssetURLLifetime = 20 * time.Minute
	assetURLStep     = 10 * time.Minute
)
