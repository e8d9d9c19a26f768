package scene

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/predicate"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/scenes"
	splathost "github.com/splathost/splathost/sdk/go"
)

// List limits (contract item 3).
const (
	defaultListLimit = 20
	maxListLimit     = 100
	// maxCursorLen bounds what a client can make the service decode.
	maxCursorLen = 512
)

// List sort keys of GET /api/v1/splats.
const (
	sortCreatedAt  = "createdAt"
	sortUpdatedAt  = "updatedAt"
	sortFeaturedAt = "featuredAt"
	sortViewCount  = "viewCount"
)

// neverFeatured is the featuredAt a never-featured scene (featured_at NULL) sorts with: older than
// any real featuring time, so sort=featuredAt lists every scene, with the never-featured ones
// last in the default descending order (first when ascending), ordered among themselves by id.
var neverFeatured = time.Unix(0, 0).UTC()

// listParams is a validated GET /api/v1/splats query.
type listParams struct {
	limit    int
	sort     string
	desc     bool
	featured *bool
	after    *listCursor
}

// listCursor is the position after the last scene of a page: its sort value and id. On the wire
// it is opaque: base64url (unpadded) of the JSON {s, v, id}; s is the sort it was made for, so a
// cursor replayed with another sort is a 400 rather than a silently wrong page.
type listCursor struct {
	Sort  string          `json:"s"`
	Value json.RawMessage `json:"v"`
	ID    string          `json:"id"`

	// Decoded Value: a time for the time sorts, a count for viewCount.
	at    time.Time
	count int64
}

// parseListParams validates the query; get returns a parameter's value and whether it is set.
// An empty value counts as omitted (clients often send cursor= for the first page); unknown
// parameters are ignored, as most HTTP APIs do.
func parseListParams(get func(string) (string, bool)) (*listParams, error) {
	p := &listParams{limit: defaultListLimit, sort: sortCreatedAt, desc: true}
	var issues []string
	param := func(name string) (string, bool) {
		v, ok := get(name)
		return v, ok && v != ""
	}
	if v, ok := param("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			issues = append(issues, "limit: must be an integer from 1 to 100")
		} else {
			p.limit = n
		}
	}
	if v, ok := param("sort"); ok {
		switch v {
		case sortCreatedAt, sortUpdatedAt, sortFeaturedAt, sortViewCount:
			p.sort = v
		default:
			issues = append(issues, "sort: must be one of 'createdAt', 'updatedAt', 'featuredAt', 'viewCount'")
		}
	}
	if v, ok := param("dir"); ok {
		switch v {
		case "asc":
			p.desc = false
		case "desc":
		default:
			issues = append(issues, "dir: must be one of 'asc', 'desc'")
		}
	}
	if v, ok := param("featured"); ok {
		switch v {
		case "true", "false":
			b := v == "true"
			p.featured = &b
		default:
			issues = append(issues, "featured: must be 'true' or 'false'")
		}
	}
	if v, ok := param("cursor"); ok && len(issues) == 0 {
		c, err := decodeCursor(v, p.sort)
		if err != nil {
			issues = append(issues, "cursor: "+err.Error())
		} else {
			p.after = c
		}
	}
	if len(issues) > 0 {
		return nil, apperr.Invalid("invalid query parameters", issues...)
	}
	return p, nil
}

type cursorError string

func (e cursorError) Error() string { return string(e) }

const errCursorInvalid = cursorError("invalid cursor; pass nextCursor from a previous page unchanged")

func decodeCursor(s, sort string) (*listCursor, error) {
	if len(s) > maxCursorLen {
		return nil, errCursorInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errCursorInvalid
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c listCursor
	if err := dec.Decode(&c); err != nil || !ids.Valid(c.ID) || len(c.Value) == 0 {
		return nil, errCursorInvalid
	}
	if c.Sort != sort {
		return nil, cursorError("this cursor belongs to a list sorted by another key; keep sort unchanged while paging")
	}
	switch sort {
	case sortViewCount:
		if err := json.Unmarshal(c.Value, &c.count); err != nil {
			return nil, errCursorInvalid
		}
	default:
		var v string
		if err := json.Unmarshal(c.Value, &v); err != nil {
			return nil, errCursorInvalid
		}
		if c.at, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return nil, errCursorInvalid
		}
	}
	return &c, nil
}

// encodeCursor is the cursor after sc in a list sorted by sort.
func encodeCursor(sc *ent.Scene, sort string) string {
	var v any
	switch sort {
	case sortCreatedAt:
		v = sc.CreatedAt.UTC().Format(time.RFC3339Nano)
	case sortUpdatedAt:
		v = sc.UpdatedAt.UTC().Format(time.RFC3339Nano)
	case sortFeaturedAt:
		at := neverFeatured
		if sc.FeaturedAt != nil {
			at = *sc.FeaturedAt
		}
		v = at.UTC().Format(time.RFC3339Nano)
	case sortViewCount:
		v = sc.ViewCount
	}
	value, _ := json.Marshal(v)
	raw, _ := json.Marshal(listCursor{Sort: sort, Value: value, ID: sc.ID})
	return base64.RawURLEncoding.EncodeToString(raw)
}

// sortExpr is the SQL the list orders by. featuredAt treats NULL as neverFeatured; with
// featured=true every row has a featured_at, and the bare column lets Postgres walk the
// (integration_id, featured, featured_at, id) index.
func (p *listParams) sortExpr(s *sql.Selector) string {
	switch p.sort {
	case sortUpdatedAt:
		return s.C(scene.FieldUpdatedAt)
	case sortViewCount:
		return s.C(scene.FieldViewCount)
	case sortFeaturedAt:
		if p.featured != nil && *p.featured {
			return s.C(scene.FieldFeaturedAt)
		}
		return "COALESCE(" + s.C(scene.FieldFeaturedAt) + ", '1970-01-01T00:00:00Z'::timestamptz)"
	}
	return s.C(scene.FieldCreatedAt)
}

// afterCursor is the keyset condition: rows strictly after the cursor in the list's order, as
// one row-value comparison on (sort key, id), which Postgres turns into an index range.
func (p *listParams) afterCursor() predicate.Scene {
	return func(s *sql.Selector) {
		expr, op := p.sortExpr(s), " < "
		if !p.desc {
			op = " > "
		}
		var v any = p.after.at
		if p.sort == sortViewCount {
			v = p.after.count
		}
		s.Where(sql.P(func(b *sql.Builder) {
			b.WriteString("(" + expr + ", " + s.C(scene.FieldID) + ")" + op + "(")
			b.Arg(v).Comma().Arg(p.after.ID)
			b.WriteString(")")
		}))
	}
}

// order sorts by the sort key, then id, both in the requested direction: id makes the order
// total, so a keyset page boundary is never ambiguous.
func (p *listParams) order() scene.OrderOption {
	return func(s *sql.Selector) {
		dir := " ASC"
		if p.desc {
			dir = " DESC"
		}
		s.OrderExpr(sql.Expr(p.sortExpr(s) + dir))
		s.OrderExpr(sql.Expr(s.C(scene.FieldID) + dir))
	}
}

// listScenes answers GET /api/v1/splats (contract item 3): the integration's live scenes, or
// only the EU's when the header is sent, a keyset page at a time. Retained (archived) scenes
// never appear. Pages are stable under concurrent inserts: every scene that exists for the
// whole walk is visited exactly once.
func (s *Service) listScenes(c *fiber.Ctx) error {
	caller, err := httpx.KeyCaller(c)
	if err != nil {
		return err
	}
	args := c.Context().QueryArgs()
	p, err := parseListParams(func(name string) (string, bool) {
		if !args.Has(name) {
			return "", false
		}
		return string(args.Peek(name)), true
	})
	if err != nil {
		return err
	}
	eu := callerEU(caller)
	key := pageKey(p, caller.HasExternalUser, eu)
	page, err := s.cache.page(c.UserContext(), caller.IntegrationID, key, func(ctx context.Context) (*scenePage, error) {
		return s.queryPage(ctx, caller.IntegrationID, caller.HasExternalUser, eu, p)
	})
	if err != nil {
		return apperr.Internal(err)
	}
	// The page may come from the cache, shared by every caller of the same query: what depends
	// on the caller is rendered here, per request.
	items := make([]splathost.Splat, len(page.rows))
	for i, sc := range page.rows {
		items[i] = s.itemOf(sc, ownerEUOf(sc), caller.ProductSlug, eu)
	}
	return c.JSON(fiber.Map{"status": "success", "splats": items, "nextCursor": page.next})
}

// queryPage reads one list page of the integration's live scenes (only eu's when hasEU).
func (s *Service) queryPage(ctx context.Context, integrationID string, hasEU bool, eu string, p *listParams) (*scenePage, error) {
	q := s.db.Ent.Scene.Query().Where(scene.IntegrationID(integrationID), scene.ArchivedAtIsNil())
	if hasEU {
		// external_user_id is unique within the integration, and the scene's own
		// integration_id already confines the list to the caller's integration.
		q.Where(scene.HasOwnerWith(db.Customer(integrationID, eu)))
	}
	if p.featured != nil {
		q.Where(scene.Featured(*p.featured))
		if *p.featured && p.sort == sortFeaturedAt {
			q.Where(scene.FeaturedAtNotNil())
		}
	}
	if p.after != nil {
		q.Where(p.afterCursor())
	}
	// One query for the page (one extra row tells whether another page follows) and one for the
	// owners' external user ids of the whole page.
	rows, err := q.Select(scenes.ItemColumns...).Order(p.order()).Limit(p.limit + 1).
		WithOwner(scenes.WithOwnerEU).
		All(ctx)
	if err != nil {
		return nil, err
	}
	page := &scenePage{rows: rows}
	if len(rows) > p.limit {
		page.rows = rows[:p.limit]
		cur := encodeCursor(page.rows[len(page.rows)-1], p.sort)
		page.next = &cur
	}
	return page, nil
}

// ownerEUOf is the eager-loaded owner's external user id (scenes.OwnerEU).
var ownerEUOf = scenes.OwnerEU
