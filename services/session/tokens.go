package session

import (
	"context"
	"slices"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// IntegrationLookup finds the integration of a public key and the status of a customer;
// *credentials.Cache (the gateway's in-memory credential cache) implements it.
type IntegrationLookup interface {
	ByPublicKey(ctx context.Context, publicKey string) (*credentials.Integration, error)
	CustomerActive(ctx context.Context, integrationID, eu string) (bool, error)
}

// Verifier implements gateway.SessionVerifier: a session bearer becomes a caller of the
// session scheme.
type Verifier struct {
	keys         *sessiontoken.Keys
	integrations IntegrationLookup
}

// NewVerifier returns the session verifier over the token keys and the integrations.
func NewVerifier(keys *sessiontoken.Keys, integrations IntegrationLookup) *Verifier {
	return &Verifier{keys: keys, integrations: integrations}
}

// VerifySession checks a session token and that its integration is still the one holding its
// public key: a token naming another integration's key is forged (401) and a revoked
// integration's sessions end at once (410), as its keys do. The rights are those of now, not of
// the mint: the session keeps only the capabilities the integration still has, and a session
// scoped to a customer who is no longer active is marked so (it may view, not edit; see
// CustomerInactive). It costs no database round trip while the integration cache is live.
func (v *Verifier) VerifySession(ctx context.Context, token string) (*httpx.Caller, error) {
	claims, err := v.keys.Parse(token)
	if err != nil {
		return nil, err
	}
	in, err := v.integrations.ByPublicKey(ctx, claims.PublicKey)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if in == nil || in.ID != claims.IntegrationID {
		return nil, sessiontoken.ErrInvalid
	}
	if in.Revoked {
		return nil, apperr.Gone("integration revoked")
	}
	caps := make([]string, 0, len(claims.Capabilities))
	for _, c := range claims.Capabilities {
		if slices.Contains(in.Capabilities, c) {
			caps = append(caps, c)
		}
	}
	caller := &httpx.Caller{
		Scheme: httpx.SchemeSession, IntegrationID: in.ID, AccountID: in.AccountID, ProductSlug: in.ProductSlug,
		PublicKey: in.PublicKey, Capabilities: caps,
		ExternalUserID: claims.ExternalUserID, HasExternalUser: claims.ExternalUserID != "",
		Session: map[string]any{claimSub: claims.Subject, claimSplatID: claims.SplatID,
			httpx.SessionID: sessiontoken.SessionID(token)},
	}
	// The end-user profile travels too: the multiplayer room shows it.
	if claims.Name != "" {
		caller.Session[claimName] = claims.Name
	}
	if claims.AvatarURL != nil {
		caller.Session[claimAvatar] = *claims.AvatarURL
	}
	// The co-edit grant travels too: the room lets only such a session, or the scene's owner, edit.
	if claims.CoEdit {
		caller.Session[claimCoEdit] = true
	}
	// The expiry travels too: the room closes a participant whose token has ended.
	if claims.ExpiresAt != nil {
		caller.Session[claimExp] = claims.ExpiresAt.Unix()
	}
	if claims.ExternalUserID != "" {
		active, err := v.integrations.CustomerActive(ctx, in.ID, claims.ExternalUserID)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		if !active {
			caller.Session[httpx.SessionCustomerInactive] = true
		}
	}
	return caller, nil
}

// Keys of httpx.Caller.Session: the claims the embed API needs after verification.
const (
	claimSub     = "sub"
	claimSplatID = "splatId"
	claimCoEdit  = "coEdit"
)

// session is what a handler needs of a verified session.
type session struct {
	integrationID string
	productSlug   string
	// sub is the owner the session acts for; scoped says it is a customer (EU) record id.
	sub    string
	scoped bool
	eu     string
	// splatID pins a viewer session to one scene; viewerOnly says the pin applies.
	splatID    string
	viewerOnly bool
	// coEdit is the integrator's grant to change the drafts of the rooms the session joins.
	coEdit bool
}

// sessionCaller returns the request's session, or a 401 for any other scheme.
func sessionCaller(caller *httpx.Caller) (*session, error) {
	if caller == nil || caller.Scheme != httpx.SchemeSession {
		return nil, apperr.Unauthorized("missing or invalid session token")
	}
	s := &session{integrationID: caller.IntegrationID, productSlug: caller.ProductSlug,
		scoped: caller.HasExternalUser, eu: caller.ExternalUserID,
		viewerOnly: !slices.Contains(caller.Capabilities, sessiontoken.TypeEditor)}
	s.sub, _ = caller.Session[claimSub].(string)
	s.splatID, _ = caller.Session[claimSplatID].(string)
	s.coEdit, _ = caller.Session[claimCoEdit].(bool)
	return s, nil
}
