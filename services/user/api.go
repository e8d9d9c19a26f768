package user

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/uploadrules"
)

// Limits of the PUT /api/v1/external-user body (interface spec, Limits).
const (
	maxMetadataKeys  = 20
	maxMetadataBytes = 4096
	maxSceneIDLists  = 1000
)

// parseCustomerPatch applies every field rule of the spec's PUT table and names each problem.
func parseCustomerPatch(body []byte) (*customers.Patch, error) {
	f, err := httpx.DecodeObject(body, true)
	if err != nil {
		return nil, err
	}
	f.Only("limitBytes", "maxSplats", "status", "billingState", "keepSplatIds", "protectedSplatIds",
		"displayName", "avatarUrl", "emailHash", "metadata")
	for _, name := range []string{"limitBytes", "status", "billingState", "keepSplatIds", "protectedSplatIds"} {
		f.NotNull(name)
	}
	p := &customers.Patch{}
	if v, ok := f.Int("limitBytes", 0, math.MaxInt64); ok {
		p.LimitBytes = &v
	}
	if v, ok := f.Int("maxSplats", 0, math.MaxInt64); ok {
		p.MaxSplats = &v
	}
	p.ClearMax = f.IsNull("maxSplats")
	if v, ok := f.Enum("status", "active", "inactive"); ok {
		p.Status = &v
	}
	if v, ok := f.Enum("billingState", "active", "suspended", "canceled"); ok {
		p.BillingState = &v
	}
	p.DisplayName = optionalString(f, "displayName", 1, 120, nil)
	p.AvatarURL = optionalString(f, "avatarUrl", 1, 2048, httpx.HTTPURLProblem)
	p.EmailHash = optionalString(f, "emailHash", 8, 128, func(s string) string {
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
			p.Metadata = &none
		} else if m, ok := parseMetadata(f); ok {
			p.Metadata = &m
		}
	}
	p.KeepSceneIDs, _ = f.StringList("keepSplatIds", maxSceneIDLists, ids.Valid, "must be a 24-character hexadecimal scene id")
	p.ProtectedIDs, _ = f.StringList("protectedSplatIds", maxSceneIDLists, ids.Valid, "must be a 24-character hexadecimal scene id")
	p.HasRetention = f.Has("billingState") || f.Has("limitBytes") || f.Has("maxSplats") ||
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
	put, err := s.store().Put(ctx, customerKey(caller, eu), p, func(u *ent.ExternalUser) any {
		v := viewOf(u, caller.ProductSlug)
		return customers.Answer{Status: "success", ExternalUser: &v}
	})
	if err != nil {
		return err
	}
	s.events.Flush(ctx, &put.Hooks)
	s.applyRetentionTimers(ctx, caller.IntegrationID, put)
	return httpx.SendRecorded(c, put.Answer)
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
	return c.JSON(customers.Answer{Status: "success", ExternalUser: v})
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
	used, err := s.store().LiveSceneCount(c.UserContext(), v.ID)
	if err != nil {
		return err
	}
	open, err := s.store().OpenUploads(c.UserContext(), v.ID)
	if err != nil {
		return err
	}
	// openUploads stands apart from storage: what open tickets declare is not charged until a
	// commit, but it is the room they hold against the bound on open uploads.
	room := quota.OpenUploadRoom(quota.Meter{UsedBytes: v.UsedBytes, LimitBytes: v.LimitBytes}, uploadrules.MaxFileBytes)
	return c.JSON(fiber.Map{"status": "success", "usage": fiber.Map{
		"storage":     quota.SnapshotOf(v.UsedBytes, v.LimitBytes),
		"splats":      fiber.Map{"used": used, "limit": v.MaxSplats},
		"openUploads": fiber.Map{"count": open.Count, "bytes": open.Bytes, "maxCount": quota.MaxOpenUploads, "maxBytes": room},
	}})
}
