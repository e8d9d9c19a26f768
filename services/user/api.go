package user

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/quota"
)

// Limits of the PUT /api/v1/external-user body (interface spec, Limits).
const (
	maxMetadataKeys  = 20
	maxMetadataBytes = 4096
	maxSceneIDLists  = 1000
)

// customerPatch is a validated PUT body: nil pointers are omitted fields.
type customerPatch struct {
	limitBytes   *int64
	maxSplats    *int64
	clearMax     bool
	status       *string
	billingState *string
	displayName  **string // set to a nil *string to clear
	avatarURL    **string
	emailHash    **string
	metadata     *map[string]any // set to a nil map to clear
	keepSceneIDs []string
	protectedIDs []string
	hasRetention bool
}

// parseCustomerPatch applies every field rule of the spec's PUT table and names each problem.
func parseCustomerPatch(body []byte) (*customerPatch, error) {
	f, err := httpx.DecodeObject(body, true)
	if err != nil {
		return nil, err
	}
	f.Only("limitBytes", "maxSplats", "status", "billingState", "keepSplatIds", "protectedSplatIds",
		"displayName", "avatarUrl", "emailHash", "metadata")
	for _, name := range []string{"limitBytes", "status", "billingState", "keepSplatIds", "protectedSplatIds"} {
		f.NotNull(name)
	}
	p := &customerPatch{}
	if v, ok := f.Int("limitBytes", 0, math.MaxInt64); ok {
		p.limitBytes = &v
	}
	if v, ok := f.Int("maxSplats", 0, math.MaxInt64); ok {
		p.maxSplats = &v
	}
	p.clearMax = f.IsNull("maxSplats")
	if v, ok := f.Enum("status", "active", "inactive"); ok {
		p.status = &v
	}
	if v, ok := f.Enum("billingState", "active", "suspended", "canceled"); ok {
		p.billingState = &v
	}
	p.displayName = optionalString(f, "displayName", 1, 120, nil)
	p.avatarURL = optionalString(f, "avatarUrl", 1, 2048, httpx.HTTPURLProblem)
	p.emailHash = optionalString(f, "emailHash", 8, 128, func(s string) string {
		for _, r := range s {
			if r < 0x21 || r == 0x7f {
				return "must not contain spaces or control characters"
			}
		}
		return ""
	})
	if f.Has("metadata") {
		if f.IsNull("metadata") {
			var none map[string]any
			p.metadata = &none
		} else if m, ok := parseMetadata(f); ok {
			p.metadata = &m
		}
	}
	p.keepSceneIDs, _ = f.StringList("keepSplatIds", maxSceneIDLists, ids.Valid, "must be a 24-character hexadecimal scene id")
	p.protectedIDs, _ = f.StringList("protectedSplatIds", maxSceneIDLists, ids.Valid, "must be a 24-character hexadecimal scene id")
	p.hasRetention = f.Has("billingState") || f.Has("limitBytes") || f.Has("maxSplats") ||
		f.Has("keepSplatIds") || f.Has("protectedSplatIds")
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// optionalString validates a nullable string field; check returns a problem or "".
func optionalString(f *httpx.Fields, name string, min, max int, check func(string) string) **string {
	if !f.Has(name) {
		return nil
	}
	if f.IsNull(name) {
		var none *string
		return &none
	}
	s, ok := f.String(name, min, max)
	if !ok {
		return nil
	}
	if check != nil {
		if problem := check(s); problem != "" {
			f.Issuef("%s: %s", name, problem)
			return nil
		}
	}
	v := &s
	return &v
}

func parseMetadata(f *httpx.Fields) (map[string]any, bool) {
	raw, _ := f.Raw("metadata")
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		f.Issuef("metadata: must be an object")
		return nil, false
	}
	if len(m) > maxMetadataKeys {
		f.Issuef("metadata: at most %d keys", maxMetadataKeys)
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch m[k].(type) {
		case string, json.Number, bool, nil:
		default:
			f.Issuef("metadata.%s: values must be a string, number, boolean or null", httpx.Printable(k))
			return nil, false
		}
	}
	// Measure the size as a client's JSON.stringify would write it: without Go's HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m)
	if buf.Len()-1 > maxMetadataBytes { // Encode appends a newline
		f.Issuef("metadata: at most %d bytes serialized", maxMetadataBytes)
		return nil, false
	}
	return m, true
}

func (s *Service) putExternalUser(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	p, err := parseCustomerPatch(c.Body())
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var out *ent.ExternalUser
	var fx *lifecycleEffects
	// hooks are the retention events of the PUT, written with the lifecycle's changes.
	var hooks events.Batch
	var answer *idempotency.Recorded
	for attempt := 1; ; attempt++ {
		err = s.db.InTx(ctx, func(tx *ent.Tx) error {
			hooks = events.Batch{}
			if err := s.putTx(ctx, tx, caller, eu, p, &out, &fx, &hooks); err != nil {
				return err
			}
			v := viewOf(out, caller.ProductSlug)
			var err error
			answer, err = idempotency.Record(ctx, tx, fiber.StatusOK, externalUserResponse{Status: "success", ExternalUser: &v})
			return err
		})
		if err == nil || attempt == txAttempts || !retryable(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	s.events.Flush(ctx, &hooks)
	s.applyRetentionTimers(ctx, caller, out, fx)
	return answer.Send(c)
}

// putTx is the PUT transaction: upsert, lock, patch, then the billing lifecycle (lifecycle.go).
func (s *Service) putTx(ctx context.Context, tx *ent.Tx, caller *httpx.Caller, eu string, p *customerPatch,
	out **ent.ExternalUser, fx **lifecycleEffects, hooks *events.Batch) error {
	// Create-if-missing with ON CONFLICT DO NOTHING, then lock the row: concurrent first
	// PUTs of one customer serialize on the unique index and produce exactly one record.
	if _, err := tx.ExecContext(ctx, `INSERT INTO external_users
		(id, created_at, updated_at, integration_id, external_user_id, limit_bytes, status, billing_state, used_bytes, splat_count)
		SELECT $1, now(), now(), $2, $3, a.storage_bundle_bytes, 'active', 'active', 0, 0 FROM accounts a WHERE a.id = $4
		ON CONFLICT (integration_id, external_user_id) DO NOTHING`,
		ids.New(), caller.IntegrationID, eu, caller.AccountID); err != nil {
		return err
	}
	if p.hasRetention {
		// Lock order of every scene writer: scene rows, then the customer, then the account.
		if err := lockCustomerScenes(ctx, tx, caller.IntegrationID, eu); err != nil {
			return err
		}
	}
	u, err := tx.ExternalUser.Query().
		Where(db.Customer(caller.IntegrationID, eu)).
		ForUpdate().Only(ctx)
	if err != nil {
		return err
	}
	before := u.Status
	if u, err = applyPatch(ctx, u, p); err != nil {
		return err
	}
	if u.Status != before {
		// Sessions scoped to this customer check the status at every use, from the caches.
		if err := notifyCustomer(ctx, tx, caller.IntegrationID, eu); err != nil {
			return err
		}
	}
	if *out, *fx, err = applyLifecycle(ctx, tx, caller, u, p, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
		return err
	}
	for _, e := range []struct {
		typ string
		ids []string
	}{{events.RetentionArchived, (*fx).archived}, {events.RetentionRestored, (*fx).restored}} {
		for _, id := range e.ids {
			ref := events.SceneRef{SplatID: id, ExternalUserID: eu}
			if err := s.events.Emit(ctx, tx, hooks, caller.IntegrationID, e.typ, events.Value(ref)); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyPatch writes the supplied fields. Suspended and canceled force the customer inactive and
// default omitted caps to 0 (spec, States and transitions); the retained-archive effects of the
// billing lifecycle are applied by the lifecycle itself.
func applyPatch(ctx context.Context, u *ent.ExternalUser, p *customerPatch) (*ent.ExternalUser, error) {
	up := u.Update()
	if u.Status == externaluser.StatusDeleted {
		// A PUT for a soft-deleted customer provisions them again.
		up.SetStatus(externaluser.StatusActive).ClearDeletedAt()
	}
	if p.limitBytes != nil {
		up.SetLimitBytes(*p.limitBytes)
	}
	if p.maxSplats != nil {
		up.SetMaxSplats(*p.maxSplats)
	} else if p.clearMax {
		up.ClearMaxSplats()
	}
	if p.status != nil {
		up.SetStatus(externaluser.Status(*p.status))
	}
	if p.billingState != nil {
		state := externaluser.BillingState(*p.billingState)
		up.SetBillingState(state)
		if state != u.BillingState {
			up.SetBillingStateChangedAt(time.Now())
		}
		if state != externaluser.BillingStateActive {
			up.SetStatus(externaluser.StatusInactive)
			if p.limitBytes == nil {
				up.SetLimitBytes(0)
			}
			if p.maxSplats == nil && !p.clearMax {
				up.SetMaxSplats(0)
			}
		}
	}
	if p.displayName != nil {
		up.SetNillableDisplayName(*p.displayName)
		if *p.displayName == nil {
			up.ClearDisplayName()
		}
	}
	if p.avatarURL != nil {
		up.SetNillableAvatarURL(*p.avatarURL)
		if *p.avatarURL == nil {
			up.ClearAvatarURL()
		}
	}
	if p.emailHash != nil {
		up.SetNillableEmailHash(*p.emailHash)
		if *p.emailHash == nil {
			up.ClearEmailHash()
		}
	}
	if p.metadata != nil {
		if *p.metadata == nil {
			up.ClearMetadata()
		} else {
			up.SetMetadata(*p.metadata)
		}
	}
	return up.Save(ctx)
}

func (s *Service) getExternalUser(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	v, err := s.loadCustomer(c.UserContext(), caller, eu)
	if err != nil {
		return err
	}
	return c.JSON(externalUserResponse{Status: "success", ExternalUser: v})
}

func (s *Service) getUsage(c *fiber.Ctx) error {
	caller, eu, err := httpx.KeyCallerWithEU(c)
	if err != nil {
		return err
	}
	return s.writeUsage(c, caller, eu)
}

// writeUsage answers the spec's customer usage shape for eu of the caller's integration; the
// integrator's route and the operator's (admin.go) share it so they cannot drift apart.
func (s *Service) writeUsage(c *fiber.Ctx, caller *httpx.Caller, eu string) error {
	v, err := s.loadCustomer(c.UserContext(), caller, eu)
	if err != nil {
		return err
	}
	used, err := s.liveSceneCount(c.UserContext(), v.ID)
	if err != nil {
		return apperr.Internal(err)
	}
	return c.JSON(fiber.Map{"status": "success", "usage": fiber.Map{
		"storage": quota.SnapshotOf(v.UsedBytes, v.LimitBytes),
		"splats":  fiber.Map{"used": used, "limit": v.MaxSplats},
	}})
}

type externalUserResponse struct {
	Status       string        `json:"status"`
	ExternalUser *customerView `json:"externalUser"`
}
