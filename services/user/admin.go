package user

import (
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
)

// The operator API of contract.md item 2. The gateway admits only the admin token here; each
// handler checks the scheme again (httpx.RequireAdmin) so a wiring mistake cannot expose it.

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
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	accountFields(f, true)
	name, _ := f.String("name", 1, 200)
	plan, _ := f.Enum("plan", customers.Plans...)
	bundle, _ := f.Int("storageBundleBytes", 0, math.MaxInt64)
	maxSplats, hasMax := f.Int("maxSplats", 0, math.MaxInt64)
	overage, _ := f.Bool("overage")
	if problem := customers.OverageProblem(plan, overage); plan != "" && problem != "" {
		f.Issuef("%s", problem)
	}
	if err := f.Err(); err != nil {
		return err
	}
	acct := customers.Account{Name: name, Plan: plan, StorageBundleBytes: bundle, Overage: overage}
	if hasMax {
		acct.MaxSplats = &maxSplats
	}
	a, err := s.store().CreateAccount(c.UserContext(), acct)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "success", "account": accountJSON(a)})
}

func (s *Service) getAccount(c *fiber.Ctx) error {
	a, err := s.store().Account(c.UserContext(), c.Params("accountId"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "account": accountJSON(a)})
}

func (s *Service) patchAccount(c *fiber.Ctx) error {
	p, err := parseAccountPatch(c.Body())
	if err != nil {
		return err
	}
	out, planChanged, err := s.store().UpdateAccount(c.UserContext(), c.Params("accountId"), p.Apply)
	if err != nil {
		return err
	}
	if planChanged {
		s.changed()
	}
	return c.JSON(fiber.Map{"status": "success", "account": accountJSON(out)})
}

// parseAccountPatch validates a PATCH body: at least one field, each as accountFields says.
func parseAccountPatch(body []byte) (*customers.AccountPatch, error) {
	f, err := httpx.DecodeObject(body, false)
	if err != nil {
		return nil, err
	}
	accountFields(f, false)
	if f.Len() == 0 {
		f.Issuef("body: at least one field is required")
	}
	p := &customers.AccountPatch{ClearMax: f.IsNull("maxSplats")}
	if v, ok := f.String("name", 1, 200); ok {
		p.Name = &v
	}
	if v, ok := f.Enum("plan", customers.Plans...); ok {
		p.Plan = &v
	}
	if v, ok := f.Int("storageBundleBytes", 0, math.MaxInt64); ok {
		p.StorageBundleBytes = &v
	}
	if v, ok := f.Int("maxSplats", 0, math.MaxInt64); ok {
		p.MaxSplats = &v
	}
	if v, ok := f.Bool("overage"); ok {
		p.Overage = &v
	}
	return p, f.Err()
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
	publicKey, secretKey := credentials.NewKeyPair()
	in, err := s.store().CreateIntegration(c.UserContext(), accountID, publicKey, customers.Integration{ProductSlug: slug,
		Capabilities: caps, RestAccess: rest, FrameAncestors: frames, SecretHash: credentials.HashSecret(secretKey)})
	if err != nil {
		return err
	}
	s.changed()
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "success", "integration": integrationJSON(in, secretKey)})
}

func (s *Service) getIntegration(c *fiber.Ctx) error {
	in, err := s.store().Integration(c.UserContext(), c.Params("integrationId"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "integration": integrationJSON(in, "")})
}

func (s *Service) patchIntegration(c *fiber.Ctx) error {
	f, err := httpx.DecodeObject(c.Body(), false)
	if err != nil {
		return err
	}
	p := &customers.IntegrationPatch{ClearFrames: f.IsNull("frameAncestors")}
	var rest, hasRest bool
	p.ProductSlug, p.Capabilities, rest, hasRest, p.FrameAncestors, p.HasFrames = integrationFields(f, false)
	if hasRest {
		p.RestAccess = &rest
	}
	if f.Len() == 0 {
		f.Issuef("body: at least one field is required")
	}
	if err := f.Err(); err != nil {
		return err
	}
	out, err := s.store().UpdateIntegration(c.UserContext(), c.Params("integrationId"), func(in *customers.Integration) error {
		p.Apply(in)
		return nil
	})
	return s.answerIntegration(c, out, "", err)
}

// answerIntegration answers a committed change of an integration (secretKey only when just
// issued), after dropping this process's cached integrations.
func (s *Service) answerIntegration(c *fiber.Ctx, out *ent.Integration, secretKey string, err error) error {
	if err != nil {
		return err
	}
	s.changed()
	return c.JSON(fiber.Map{"status": "success", "integration": integrationJSON(out, secretKey)})
}

func (s *Service) rotateIntegration(c *fiber.Ctx) error {
	_, secretKey := credentials.NewKeyPair()
	out, err := s.store().UpdateIntegration(c.UserContext(), c.Params("integrationId"), func(in *customers.Integration) error {
		if in.RevokedAt != nil {
			return apperr.Gone("integration revoked")
		}
		in.SecretHash = credentials.HashSecret(secretKey)
		return nil
	})
	return s.answerIntegration(c, out, secretKey, err)
}

func (s *Service) revokeIntegration(c *fiber.Ctx) error {
	now := time.Now()
	_, err := s.store().UpdateIntegration(c.UserContext(), c.Params("integrationId"), func(in *customers.Integration) error {
		if in.RevokedAt != nil {
			return customers.Unchanged // revoking twice is harmless; the first time stands
		}
		in.RevokedAt = &now
		return nil
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
	in, err := s.store().Integration(c.UserContext(), c.Params("integrationId"))
	if err != nil {
		return err
	}
	eu, err := url.PathUnescape(c.Params("externalUserId"))
	// The segment arrives escaped, so it can spell what no external user id holds (the EU header
	// refuses control characters) and what Postgres text refuses outright (NUL, invalid UTF-8):
	// such an id names no customer.
	if err != nil || eu == "" || strings.IndexByte(eu, 0) >= 0 || !utf8.ValidString(eu) {
		return apperr.CustomerNotProvisioned(http.StatusNotFound)
	}
	return s.writeUsage(c, &httpx.Caller{IntegrationID: in.ID, AccountID: in.AccountID, ProductSlug: in.ProductSlug}, eu)
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
