// Package session is the session service: embed-session minting, the session-bearer API used
// inside the embeds, and the embed pages.
package session

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/db"
)

// Prefixes are the path prefixes this service owns; a split gateway forwards them here.
var Prefixes = []string{"/api/editor", "/api/embed", "/embed"}

// Service handles the session service's routes.
type Service struct {
	db  *db.DB
	log *slog.Logger
}

// New returns the session service.
func New(d *db.DB, log *slog.Logger) *Service { return &Service{db: d, log: log} }

// Register mounts the service's routes; minting and the embeds arrive with the sessions work.
func (s *Service) Register(r fiber.Router) {}
