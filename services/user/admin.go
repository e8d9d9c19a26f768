package user

import (
	"context"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/account"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
)

// The operator API of contract.md item 2. The gateway admits only the admin token here; each
// handler checks the scheme again (httpx.RequireAdmin) so a wiring mistake cannot expose it.

var plans = []string{"free", "pro", "enterprise"}

// accountFields validates an account body; create requires name, plan and storageBundleBytes.
func accountFields(f *httpx.Fields, create bool) {
	f.Only("name", "plan", "storageBundleBytes", "maxSplats", "overage")
	if create {
		f.Require("name", "plan", "storageBundleBytes")
		f.NotNull("overage")
		return
	}
	for _, name := range []string{"name", "plan", "storageBundleBytes", "overage"} {
		f.NotNull(name)
	}
}

func (s *Service) createAccount(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	accountFields(f, true)
	name, _ := f.String("name", 1, 200)
	plan, _ := f.Enum("plan", plans...)
	bundle, _ := f.Int("storageBundleBytes", 0, math.MaxInt64)
	maxSplats, hasMax := f.Int("maxSplats", 0, math.MaxInt64)
	overage, _ := f.Bool("overage")
	if overage && plan != "" && plan != "enterprise" {
		f.Issuef("overage: only the enterprise plan supports overage")
	}
	if err := f.Err(); err != nil {
		return err
	}
	create := s.db.Ent.Account.Create().SetName(name).SetPlan(account.Plan(plan)).
		SetStorageBundleBytes(bundle).SetOverage(overage)
	if hasMax {
		create.SetMaxSplats(maxSplats)
	}
	a, err := create.Save(c.UserContext())
	if err != nil {
		return apperr.Internal(err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "success", "account": accountJSON(a)})
}

func (s *Service) getAccount(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	a, err := s.account(c.UserContext(), c.Params("accountId"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "account": accountJSON(a)})
}

func (s *Service) patchAccount(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	id := c.Params("accountId")
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	accountFields(f, false)
	if f.Len() == 0 {
		f.Issuef("body: at least one field is required")
	}
	name, hasName := f.String("name", 1, 200)
	plan, hasPlan := f.Enum("plan", plans...)
	bundle, hasBundle := f.Int("storageBundleBytes", 0, math.MaxInt64)
	maxSplats, hasMax := f.Int("maxSplats", 0, math.MaxInt64)
	overage, hasOverage := f.Bool("overage")
	if err := f.Err(); err != nil {
		return err
	}
	var out *ent.Account
	var planChanged bool
	err = s.db.InTx(c.UserContext(), func(tx *ent.Tx) error {
		if !ids.Valid(id) {
			return apperr.NotFound("account not found")
		}
		a, err := tx.Account.Query().Where(account.ID(id)).ForUpdate().Only(c.UserContext())
		if ent.IsNotFound(err) {
			return apperr.NotFound("account not found")
		} else if err != nil {
			return err
		}
		// Validate overage against the plan the account will have after this change.
		finalPlan, finalOverage := string(a.Plan), a.Overage
		if hasPlan {
			finalPlan = plan
		}
		if hasOverage {
			finalOverage = overage
		}
		if finalOverage && finalPlan != "enterprise" {
			return apperr.Invalid("validation failed", "overage: only the enterprise plan supports overage")
		}
		u := a.Update()
		if hasName {
			u.SetName(name)
		}
		if hasPlan {
			u.SetPlan(account.Plan(plan))
		}
		if hasBundle {
			u.SetStorageBundleBytes(bundle)
		}
		if hasMax {
			u.SetMaxSplats(maxSplats)
		} else if f.IsNull("maxSplats") {
			u.ClearMaxSplats()
		}
		if hasOverage {
			u.SetOverage(overage)
		}
		if out, err = u.Save(c.UserContext()); err != nil {
			return err
		}
		// The gateway's rate limit of the account's integrations follows the plan: their cached
		// rows (which carry it) are dropped everywhere.
		if planChanged = hasPlan && plan != string(a.Plan); planChanged {
			return notifyIntegration(c.UserContext(), tx, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if planChanged {
		s.changed()
	}
	return c.JSON(fiber.Map{"status": "success", "account": accountJSON(out)})
}

func (s *Service) account(ctx context.Context, id string) (*ent.Account, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("account not found")
	}
	a, err := s.db.Ent.Account.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("account not found")
	}
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return a, nil
}

// productSlugRE accepts a site domain or a simple slug.
var productSlugRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$`)

// frameAncestorRE accepts CSP source expressions an operator may allow to frame the embeds:
// schemes with hosts, optional wildcard subdomain and port.
var frameAncestorRE = regexp.MustCompile(`^(?:'self'|https?://(?:\*\.)?[A-Za-z0-9.-]+(?::[0-9]{1,5})?)$`)

func integrationFields(f *httpx.Fields, create bool) (slug string, caps []string, rest, hasRest bool, frames []string, hasFrames bool) {
	allowed := []string{"productSlug", "capabilities", "restAccess", "frameAncestors"}
	if create {
		allowed = append(allowed, "accountId")
	}
	f.Only(allowed...)
	if create {
		f.Require("accountId", "productSlug", "capabilities")
		f.NotNull("restAccess")
		f.NotNull("frameAncestors")
	} else {
		for _, name := range allowed {
			f.NotNull(name)
		}
	}
	if f.Has("productSlug") {
		if v, ok := f.String("productSlug", 1, 253); ok {
			if productSlugRE.MatchString(v) {
				slug = v
			} else {
				f.Issuef("productSlug: must be a domain or slug of letters, digits, '.', '_' and '-'")
			}
		}
	}
	if list, ok := f.StringList("capabilities", 2, func(v string) bool { return v == "viewer" || v == "editor" },
		"must be 'viewer' or 'editor'"); ok {
		caps = list
		if len(caps) == 0 {
			f.Issuef("capabilities: at least one of 'viewer', 'editor' is required")
		}
	}
	rest, hasRest = f.Bool("restAccess")
	frames, hasFrames = f.StringList("frameAncestors", 32, frameAncestorRE.MatchString,
		"must be 'self' or an http(s) origin such as https://*.example.com")
	return
}

func (s *Service) createIntegration(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	accountID, _ := f.String("accountId", 1, 64)
	slug, caps, rest, hasRest, frames, _ := integrationFields(f, true)
	if err := f.Err(); err != nil {
		return err
	}
	if !hasRest {
		rest = true
	}
	if _, err := s.account(c.UserContext(), accountID); err != nil {
		return err
	}
	publicKey, secretKey := credentials.NewKeyPair()
	var in *ent.Integration
	err = s.db.InTx(c.UserContext(), func(tx *ent.Tx) error {
		var err error
		in, err = tx.Integration.Create().SetAccountID(accountID).SetProductSlug(slug).
			SetCapabilities(caps).SetRestAccess(rest).SetPublicKey(publicKey).
			SetSecretHash(credentials.HashSecret(secretKey)).SetFrameAncestors(frames).Save(c.UserContext())
		if err != nil {
			return err
		}
		return notifyIntegration(c.UserContext(), tx, in.ID)
	})
	if err != nil {
		return err
	}
	s.changed()
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "success", "integration": integrationJSON(in, secretKey)})
}

func (s *Service) getIntegration(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	in, err := s.integration(c.UserContext(), s.db.Ent.Integration, c.Params("integrationId"), false)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "integration": integrationJSON(in, "")})
}

func (s *Service) patchIntegration(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	slug, caps, rest, hasRest, frames, hasFrames := integrationFields(f, false)
	if f.Len() == 0 {
		f.Issuef("body: at least one field is required")
	}
	if err := f.Err(); err != nil {
		return err
	}
	var out *ent.Integration
	err = s.db.InTx(c.UserContext(), func(tx *ent.Tx) error {
		in, err := s.integration(c.UserContext(), tx.Integration, c.Params("integrationId"), true)
		if err != nil {
			return err
		}
		u := in.Update()
		if slug != "" {
			u.SetProductSlug(slug)
		}
		if caps != nil {
			u.SetCapabilities(caps)
		}
		if hasRest {
			u.SetRestAccess(rest)
		}
		if hasFrames {
			u.SetFrameAncestors(frames)
		} else if f.IsNull("frameAncestors") {
			u.ClearFrameAncestors()
		}
		if out, err = u.Save(c.UserContext()); err != nil {
			return err
		}
		return notifyIntegration(c.UserContext(), tx, out.ID)
	})
	if err != nil {
		return err
	}
	s.changed()
	return c.JSON(fiber.Map{"status": "success", "integration": integrationJSON(out, "")})
}

func (s *Service) rotateIntegration(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	_, secretKey := credentials.NewKeyPair()
	var out *ent.Integration
	err := s.db.InTx(c.UserContext(), func(tx *ent.Tx) error {
		in, err := s.integration(c.UserContext(), tx.Integration, c.Params("integrationId"), true)
		if err != nil {
			return err
		}
		if in.RevokedAt != nil {
			return apperr.Gone("integration revoked")
		}
		if out, err = in.Update().SetSecretHash(credentials.HashSecret(secretKey)).Save(c.UserContext()); err != nil {
			return err
		}
		return notifyIntegration(c.UserContext(), tx, in.ID)
	})
	if err != nil {
		return err
	}
	s.changed()
	return c.JSON(fiber.Map{"status": "success", "integration": integrationJSON(out, secretKey)})
}

func (s *Service) revokeIntegration(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	err := s.db.InTx(c.UserContext(), func(tx *ent.Tx) error {
		in, err := s.integration(c.UserContext(), tx.Integration, c.Params("integrationId"), true)
		if err != nil {
			return err
		}
		if in.RevokedAt != nil {
			return nil // revoking twice is harmless; the first time stands
		}
		if err := in.Update().SetRevokedAt(time.Now()).Exec(c.UserContext()); err != nil {
			return err
		}
		return notifyIntegration(c.UserContext(), tx, in.ID)
	})
	if err != nil {
		return err
	}
	s.changed()
	return c.JSON(fiber.Map{"status": "success"})
}

// adminCustomerUsage is the customer usage an integrator reads with its keys, for the operator,
// who holds no integration secret (splathostctl customers usage). The external user id is a
// path segment here, so it arrives escaped.
func (s *Service) adminCustomerUsage(c *fiber.Ctx) error {
	if err := httpx.RequireAdmin(c); err != nil {
		return err
	}
	in, err := s.integration(c.UserContext(), s.db.Ent.Integration, c.Params("integrationId"), false)
	if err != nil {
		return err
	}
	eu, err := url.PathUnescape(c.Params("externalUserId"))
	// The segment arrives escaped, so it can spell what no external user id holds (the EU header
	// refuses control characters) and what Postgres text refuses outright (NUL, invalid UTF-8):
	// such an id names no customer.
	if err != nil || eu == "" || strings.IndexByte(eu, 0) >= 0 || !utf8.ValidString(eu) {
		return apperr.NotFound("external user not found")
	}
	return s.writeUsage(c, &httpx.Caller{IntegrationID: in.ID, AccountID: in.AccountID, ProductSlug: in.ProductSlug}, eu)
}

func (s *Service) integration(ctx context.Context, q *ent.IntegrationClient, id string, lock bool) (*ent.Integration, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("integration not found")
	}
	query := q.Query().Where(integration.ID(id))
	if lock {
		query.ForUpdate()
	}
	in, err := query.Only(ctx)
	if ent.IsNotFound(err) {
		return nil, apperr.NotFound("integration not found")
	}
	return in, err
}

// notifyIntegration tells every process to drop its cached integrations. NOTIFY inside the
// transaction is delivered only if it commits, so no process sees the news before the row.
func notifyIntegration(ctx context.Context, tx *ent.Tx, id string) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", credentials.Channel, id)
	return err
}

// notifyCustomer tells every process to drop the cached status of one customer (sessions
// scoped to the customer check it at every use). Delivered only if tx commits.
func notifyCustomer(ctx context.Context, tx *ent.Tx, integrationID, eu string) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", credentials.Channel, credentials.CustomerNotice(integrationID, eu))
	return err
}

func accountJSON(a *ent.Account) fiber.Map {
	return fiber.Map{
		"id": a.ID, "name": a.Name, "plan": a.Plan, "storageBundleBytes": a.StorageBundleBytes,
		"maxSplats": a.MaxSplats, "overage": a.Overage, "usedBytes": a.UsedBytes,
		"splatCount": a.SplatCount, "createdAt": httpx.ISOTime(a.CreatedAt), "updatedAt": httpx.ISOTime(a.UpdatedAt),
	}
}

// integrationJSON renders an integration; secretKey is included only when just issued.
func integrationJSON(in *ent.Integration, secretKey string) fiber.Map {
	m := fiber.Map{
		"id": in.ID, "accountId": in.AccountID, "productSlug": in.ProductSlug,
		"capabilities": in.Capabilities, "restAccess": in.RestAccess, "publicKey": in.PublicKey,
		"frameAncestors": nonNil(in.FrameAncestors), "revoked": in.RevokedAt != nil,
		"revokedAt": httpx.ISOTimePtr(in.RevokedAt),
		"createdAt": httpx.ISOTime(in.CreatedAt), "updatedAt": httpx.ISOTime(in.UpdatedAt),
	}
	if secretKey != "" {
		m["secretKey"] = secretKey
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
