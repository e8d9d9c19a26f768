// Package scene is the scene service: signed uploads, scene records and their quota, the clone
// API and trending.
package scene

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/objectstore"
)

// Prefixes are the path prefixes this service owns; a split gateway forwards them here.
var Prefixes = []string{"/api/v1/splats", "/api/v1/uploads"}

// Service handles the scene service's routes.
type Service struct {
	db    *db.DB
	store *objectstore.Store
	log   *slog.Logger
}

// New returns the scene service.
func New(d *db.DB, store *objectstore.Store, log *slog.Logger) *Service {
	return &Service{db: d, store: store, log: log}
}

// Register mounts the service's routes; the scene endpoints arrive with the scenes work.
func (s *Service) Register(r fiber.Router) {}
