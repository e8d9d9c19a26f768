// Package session is the session service: embed-session minting, the session-bearer API used
// inside the embeds, and the embed pages.
package session

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/roomproto"
	"github.com/splathost/splathost/internal/scenes"
	"github.com/splathost/splathost/internal/sessiontoken"
)

// Service handles the session service's routes.
type Service struct {
	db   *db.DB
	log  *slog.Logger
	keys *sessiontoken.Keys
	now  func() time.Time
	// urls renders the asset URLs of embed answers (wired by the binary, UseAssetURLs).
	urls *scenes.AssetURLs
	// rooms are the multiplayer rooms of this process (room.go); the binary runs them.
	rooms *Rooms
	// beacons bound the likes and views one session can count (beacons.go); nil: unbounded.
	beacons *beaconLimits
}

// Rooms returns the service's multiplayer rooms: the binary runs them (Rooms.Run) and adds
// their readiness check.
func (s *Service) Rooms() *Rooms { return s.rooms }

// UseAssetURLs wires the asset URL signer the embed answers (and the room's saved scenes) render
// scenes with: a scene the session may see but not everyone may gets signed asset URLs.
func (s *Service) UseAssetURLs(u *scenes.AssetURLs) { s.urls, s.rooms.urls = u, u }

// New returns the session service; keys signs the session tokens it mints.
func New(d *db.DB, log *slog.Logger, keys *sessiontoken.Keys) *Service {
	return &Service{db: d, log: log, keys: keys, now: time.Now, rooms: NewRooms(d, log)}
}

// Register mounts the service's routes. The router must already establish the caller (the
// gateway in-process, or httpx.TrustSignedCaller in a service binary).
func (s *Service) Register(r fiber.Router) {
	r.Post("/api/editor/embed-sessions", s.mint)
	r.Get("/api/embed/splats/:splatId", s.getScene)
	r.Post("/api/embed/splats/:splatId/like", s.like)
	r.Delete("/api/embed/splats/:splatId/like", s.unlike)
	r.Post("/api/embed/views", s.recordView)
	r.Get(roomproto.Path, s.room)
	// httpx.Page again (the gateway marks them too): a split session service answers its own
	// errors as pages.
	r.Get("/embed/viewer", httpx.Page, s.page(sessiontoken.TypeViewer))
	r.Get("/embed/editor", httpx.Page, s.page(sessiontoken.TypeEditor))
}
