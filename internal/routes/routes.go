// Package routes is the deployment's route table: the path prefixes each service owns. The
// gateway forwards a request to the service owning the longest prefix that matches its path,
// and each service mounts its routes under its own prefixes (boot.ServiceApp trusts the signed
// caller there). It sits below the services so that the gateway's wiring and tests, the binaries
// and the test harness route the same way without importing a service.
package routes

// Prefixes the services' routes are registered under.
const (
	// Webhooks is the user service's endpoint registry (contract item 12).
	Webhooks = "/api/v1/webhooks"
	// RenditionsAdmin is the scene service's operator API of renditions (`splathostctl
	// renditions`), inside the user service's /admin/v1/.
	RenditionsAdmin = "/admin/v1/renditions"
	// Assets is the scene service's asset route on the gateway origin.
	Assets = "/assets"
)

// The services' prefix tables: a split gateway forwards these prefixes to their service.
var (
	// User are the user service's: its customers, the webhook registry and the operator API.
	User = []string{"/api/v1/external-user", Webhooks, "/admin/v1/"}
	// Scene are the scene service's. /api/embed/editor sits inside the session service's
	// /api/embed, and /admin/v1/renditions inside the user service's /admin/v1/: the gateway
	// forwards the longest matching prefix.
	Scene = []string{"/api/v1/splats", "/api/v1/uploads", "/api/embed/editor", RenditionsAdmin}
	// ScenePublic are the scene service's prefixes a gateway forwards without a caller (anyone
	// may ask; the service decides) and with the answer streamed, not buffered.
	ScenePublic = []string{Assets}
	// Session are the session service's: embed sessions, the embed API and pages.
	Session = []string{"/api/editor", "/api/embed", "/embed"}
)
