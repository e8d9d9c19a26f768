package user

import (
	"context"
	"encoding/json"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/quota"
)

// viewOf renders the customer u as the interface's record.
func viewOf(u *ent.ExternalUser, productSlug string) customers.View {
	var meta json.RawMessage
	if u.Metadata != nil {
		meta, _ = json.Marshal(u.Metadata) // a map of JSON scalars always marshals
	}
	st := quota.SnapshotOf(u.UsedBytes, u.LimitBytes)
	return customers.View{
		ID: u.ID, IntegrationID: u.IntegrationID, ExternalUserID: u.ExternalUserID, ProductSlug: productSlug,
		DisplayName: u.DisplayName, AvatarURL: u.AvatarURL, EmailHash: u.EmailHash, Metadata: meta,
		Status: string(u.Status), BillingState: string(u.BillingState), UsedBytes: u.UsedBytes,
		LimitBytes: u.LimitBytes, MaxSplats: u.MaxSplats, RemainingBytes: st.RemainingBytes,
		PercentUsed: st.PercentUsed, DeletedAt: httpx.ISOTimePtr(u.DeletedAt),
		CreatedAt: httpx.ISOTime(u.CreatedAt), UpdatedAt: httpx.ISOTime(u.UpdatedAt),
	}
}

// loadCustomer returns the customer of the caller's integration named eu, rendered, or a 404.
func (s *Service) loadCustomer(ctx context.Context, caller *httpx.Caller, eu string) (*customers.View, error) {
	r, err := s.store().Customer(ctx, caller.IntegrationID, eu)
	if err != nil {
		return nil, err
	}
	st := quota.SnapshotOf(r.UsedBytes, r.LimitBytes)
	return &customers.View{ID: r.ID, IntegrationID: caller.IntegrationID, ExternalUserID: r.ExternalUserID,
		ProductSlug: caller.ProductSlug, DisplayName: r.DisplayName, AvatarURL: r.AvatarURL, EmailHash: r.EmailHash,
		Metadata: r.Metadata, Status: r.Status, BillingState: r.BillingState, UsedBytes: r.UsedBytes,
		LimitBytes: r.LimitBytes, MaxSplats: r.MaxSplats, RemainingBytes: st.RemainingBytes, PercentUsed: st.PercentUsed,
		DeletedAt: httpx.ISOTimePtr(r.DeletedAt), CreatedAt: httpx.ISOTime(r.CreatedAt), UpdatedAt: httpx.ISOTime(r.UpdatedAt)}, nil
}
