package session

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/integration"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// bootData is the page's boot JSON (docs/embeds.md, Pages): what the embed's script needs to
// start from the session alone.
type bootData struct {
	Kind         string    `json:"kind"`
	SessionToken string    `json:"sessionToken"`
	ExpiresAt    string    `json:"expiresAt"`
	SplatID      *string   `json:"splatId"`
	Scoped       bool      `json:"scoped"`
	Capabilities []string  `json:"capabilities"`
	User         *bootUser `json:"user"`
}

// bootUser is the end-user profile signed into the session (display identity only).
type bootUser struct {
	Name      string  `json:"name"`
	AvatarURL *string `json:"avatarUrl"`
}

// page answers GET /embed/viewer and /embed/editor?session=JWT: the embed's HTML with its boot
// data. The gateway has verified the token as a session bearer (401 and 410 pages otherwise,
// httpx.Page); the editor page also needs the editor capability (403 page).
func (s *Service) page(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		caller := httpx.CallerOf(c)
		if _, err := sessionCaller(caller); err != nil {
			return err
		}
		token := c.Query("session")
		claims, err := s.keys.Parse(token)
		if err != nil || claims.IntegrationID != caller.IntegrationID {
			return sessiontoken.ErrInvalid
		}
		frames, err := s.db.Ent.Integration.Query().Where(integration.ID(caller.IntegrationID)).
			Select(integration.FieldFrameAncestors).Only(c.UserContext())
		if ent.IsNotFound(err) {
			return sessiontoken.ErrInvalid
		}
		if err != nil {
			return apperr.Internal(err)
		}
		httpx.SetPageHeaders(c, frames.FrameAncestors)
		// The caller's capabilities are the claims' still granted by the integration (checked by
		// the gateway at this request).
		if kind == sessiontoken.TypeEditor && !slices.Contains(caller.Capabilities, sessiontoken.TypeEditor) {
			return apperr.Forbidden("this session cannot open the editor: it is not an editor session")
		}
		boot := bootData{Kind: kind, SessionToken: token, ExpiresAt: httpx.ISOTime(claims.ExpiresAt.Time),
			Scoped: claims.ExternalUserID != "", Capabilities: claims.Capabilities}
		if claims.SplatID != "" {
			boot.SplatID = &claims.SplatID
		}
		if claims.Name != "" {
			boot.User = &bootUser{Name: claims.Name, AvatarURL: claims.AvatarURL}
		}
		html, err := renderPage(boot)
		if err != nil {
			return apperr.Internal(err)
		}
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(html)
	}
}

// renderPage is the embed's HTML around its boot data. encoding/json escapes <, >, & and
// U+2028/2029, so no value can close the script element or break the parser around it; kind is
// one of two constants.
func renderPage(boot bootData) ([]byte, error) {
	data, err := json.Marshal(boot)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splathost ` + boot.Kind + `</title>
<link rel="stylesheet" href="/embed/assets/embed.css">
<script id="splathost-boot" type="application/json">`)
	b.Write(data)
	b.WriteString(`</script>
<script type="module" src="/embed/assets/` + boot.Kind + `.js"></script>
</head>
<body>
<div id="app"></div>
</body>
</html>
`)
	return b.Bytes(), nil
}
