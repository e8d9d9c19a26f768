// Package scenes holds the scene rules that more than one process applies, as plain functions
// and methods over plain values and ent rows: how a scene is rendered (the list item, the
// single-scene fetch, a webhook's payload), its asset-route URLs (AssetURLs), who may see it
// from an embed (VisibleToEmbed), its id and metadata limits; the scene service's
// transactional operations join them behind small store types. The scene service wraps them in
// HTTP handlers; the session service and the worker use them without linking any service, so
// nothing here imports Fiber (internal/arch holds that).
package scenes
