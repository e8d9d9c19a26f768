package scenes

import (
	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
)

// OpenToAll reports whether a scene's assets are served to anyone: public, embeddable, live.
func OpenToAll(sc *ent.Scene) bool {
	return sc.ArchivedAt == nil && sc.Visibility == entscene.VisibilityPublic && sc.AllowEmbed
}

// VisibleToEmbed is the embed visibility rule: sc is a live scene of integrationID that is
// public and embeddable, or owned by ownerID, the customer record id an embed session is
// scoped to ("" for a guest, which owns nothing). embedsql.VisibleScene is the same rule in
// SQL, for the statements that check it in the database; e2e's TestEmbedVisibilityRuleMatchesSQL
// feeds both the same rows.
func VisibleToEmbed(sc *ent.Scene, integrationID, ownerID string) bool {
	if sc.IntegrationID != integrationID || sc.ArchivedAt != nil {
		return false
	}
	if sc.Visibility == entscene.VisibilityPublic && sc.AllowEmbed {
		return true
	}
	return ownerID != "" && sc.OwnerID == ownerID
}
