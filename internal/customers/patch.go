package customers

import (
	"context"
	"time"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
)

// BillingActive is the billing state in which a customer may use their caps; the others
// (suspended, canceled) force the customer inactive.
const BillingActive = string(externaluser.BillingStateActive)

// Patch is a validated PUT /api/v1/external-user body: nil pointers are omitted fields.
type Patch struct {
	LimitBytes *int64
	MaxSplats  *int64
	// ClearMax is an explicit null maxSplats (no cap).
	ClearMax     bool
	Status       *string
	BillingState *string
	DisplayName  **string // set to a nil *string to clear
	AvatarURL    **string
	EmailHash    **string
	Metadata     *map[string]any // set to a nil map to clear
	// KeepSceneIDs is nil when keepSplatIds is omitted and empty when it is [].
	KeepSceneIDs []string
	ProtectedIDs []string
	// HasRetention says the body carries a field of the billing lifecycle.
	HasRetention bool
}

// applyPatch writes the supplied fields. Suspended and canceled force the customer inactive and
// default omitted caps to 0 (spec, States and transitions); the retained-archive effects of the
// billing lifecycle are applied by the lifecycle itself.
func applyPatch(ctx context.Context, u *ent.ExternalUser, p *Patch) (*ent.ExternalUser, error) {
	up := u.Update()
	if u.Status == externaluser.StatusDeleted {
		// A PUT for a soft-deleted customer provisions them again.
		up.SetStatus(externaluser.StatusActive).ClearDeletedAt()
	}
	if p.LimitBytes != nil {
		up.SetLimitBytes(*p.LimitBytes)
	}
	if p.MaxSplats != nil {
		up.SetMaxSplats(*p.MaxSplats)
	} else if p.ClearMax {
		up.ClearMaxSplats()
	}
	if p.Status != nil {
		up.SetStatus(externaluser.Status(*p.Status))
	}
	if p.BillingState != nil {
		state := externaluser.BillingState(*p.BillingState)
		up.SetBillingState(state)
		if state != u.BillingState {
			up.SetBillingStateChangedAt(time.Now())
		}
		if state != externaluser.BillingStateActive {
			up.SetStatus(externaluser.StatusInactive)
			if p.LimitBytes == nil {
				up.SetLimitBytes(0)
			}
			if p.MaxSplats == nil && !p.ClearMax {
				up.SetMaxSplats(0)
			}
		}
	}
	if p.DisplayName != nil {
		up.SetNillableDisplayName(*p.DisplayName)
		if *p.DisplayName == nil {
			up.ClearDisplayName()
		}
	}
	if p.AvatarURL != nil {
		up.SetNillableAvatarURL(*p.AvatarURL)
		if *p.AvatarURL == nil {
			up.ClearAvatarURL()
		}
	}
	if p.EmailHash != nil {
		up.SetNillableEmailHash(*p.EmailHash)
		if *p.EmailHash == nil {
			up.ClearEmailHash()
		}
	}
	if p.Metadata != nil {
		if *p.Metadata == nil {
			up.ClearMetadata()
		} else {
			up.SetMetadata(*p.Metadata)
		}
	}
	return up.Save(ctx)
}
