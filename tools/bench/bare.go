package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/customers"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/quota"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
)

// BareQuery is the one query the bare server runs per request: the same single-row lookup
// the user service makes for GET /api/v1/external-user.
const BareQuery = `SELECT id, integration_id, external_user_id, display_name, avatar_url, email_hash, metadata, status, billing_state, used_bytes, limit_bytes, max_splats, deleted_at, created_at, updated_at FROM external_users WHERE integration_id=$1 AND external_user_id=$2`

// BareIntegrationHeader carries the integration id to the bare server's view beacon route,
// which stands for a session bearer the product verifies (the key routes authenticate like the
// gateway, see bareAuth).
const BareIntegrationHeader = "X-Bench-Integration-Id"

// externalUserHeader is the interface's customer header, sent to both servers alike.
const externalUserHeader = "X-Service-External-User-Id"

// BarePath is the bare server's route.
const BarePath = "/api/v1/external-user"

// BareSceneQuery is the bare server's scene read: the columns GET /api/v1/splats/{id} returns
// (the owner's external user id joined in), by id within the caller's integration.
const BareSceneQuery = `SELECT s.id, s.title, s.description, s.image_url, s.splat_url, s.visibility, s.allow_embed,
	s.allow_comments, s.allow_reactions, s.allow_clone, s.remixed_from, s.splat_type, u.external_user_id, s.view_count,
	s.like_count, s.file_size_bytes, s.featured, s.featured_at, s.created_at, s.updated_at, s.level_data, s.lod_folder_key
	FROM scenes s JOIN external_users u ON u.id = s.owner_id
	WHERE s.id = $1 AND s.integration_id = $2 AND s.archived_at IS NULL`

// BareScenePath is the bare server's scene route; the scene id follows it.
const BareScenePath = "/api/v1/splats/"

// bareScene is one scene as the bare server returns it, in the product's shape.
type bareScene struct {
	ID             string          `json:"id"`
	Title          string          `json:"title"`
	Description    string          `json:"description"`
	ImageURL       string          `json:"imageUrl"`
	SplatURL       string          `json:"splatUrl"`
	Visibility     string          `json:"visibility"`
	AllowEmbed     bool            `json:"allowEmbed"`
	AllowComments  bool            `json:"allowComments"`
	AllowReactions bool            `json:"allowReactions"`
	AllowClone     bool            `json:"allowClone"`
	RemixedFrom    json.RawMessage `json:"remixedFrom"`
	SplatType      string          `json:"splatType"`
	ExternalUserID string          `json:"externalUserId"`
	IsOwner        bool            `json:"isOwner"`
	ViewCount      int64           `json:"viewCount"`
	LikeCount      int64           `json:"likeCount"`
	FileSizeBytes  int64           `json:"fileSizeBytes"`
	Featured       bool            `json:"featured"`
	FeaturedAt     *time.Time      `json:"featuredAt"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	LevelData      json.RawMessage `json:"levelData"`
	LodFolderKey   *string         `json:"lodFolderKey"`
}

// BareServerOptions configures the bare-server subcommand.
type BareServerOptions struct {
	// PostgresURL is the stack's product database.
	PostgresURL string
	// Addr is the listen address; port 0 picks a free port, printed on stdout.
	Addr string
	// PoolSize is the pgxpool size, the same as the product's.
	PoolSize int
}

// RunBareServer serves GET BarePath and GET BareScenePath{id}, each authenticated like the
// gateway (bareAuth) with one pgx query and a JSON response, POST BareMintPath (authentication,
// body, claims and signing) and POST BareViewsPath (the outbox insert),
// until ctx ends. It prints "listening HOST:PORT" on stdout once it accepts
// connections.
func RunBareServer(ctx context.Context, o BareServerOptions, stdout io.Writer) error {
	cfg, err := pgxpool.ParseConfig(o.PostgresURL)
	if err != nil {
		return fmt.Errorf("postgres url: %w", err)
	}
	cfg.MaxConns = int32(o.PoolSize)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres pool: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres ping: %w", err)
	}

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	auth := newBareAuth(pool)
	app.Get(BarePath, func(c *fiber.Ctx) error {
		in, eu, err := auth.keys(c)
		if err != nil {
			return refuse(c, err)
		}
		u := customers.View{ProductSlug: in.productSlug}
		var deleted *time.Time
		var created, updated time.Time
		err = pool.QueryRow(c.UserContext(), BareQuery, in.id, eu).Scan(
			&u.ID, &u.IntegrationID, &u.ExternalUserID, &u.DisplayName, &u.AvatarURL, &u.EmailHash, &u.Metadata,
			&u.Status, &u.BillingState, &u.UsedBytes, &u.LimitBytes, &u.MaxSplats, &deleted, &created, &updated)
		if errors.Is(err, pgx.ErrNoRows) {
			return c.Status(fiber.StatusNotFound).JSON(fiber.Map{"status": "error", "message": "external user not found"})
		}
		if err != nil {
			// The cause goes to the server's log (the benchmark shows its tail), not to the client.
			slog.Error("query failed", "err", err)
			return c.Status(fiber.StatusInternalServerError).JSON(fiber.Map{"status": "error", "message": "query failed"})
		}
		st := quota.SnapshotOf(u.UsedBytes, u.LimitBytes)
		u.RemainingBytes, u.PercentUsed = st.RemainingBytes, st.PercentUsed
		u.DeletedAt, u.CreatedAt, u.UpdatedAt = httpx.ISOTimePtr(deleted), httpx.ISOTime(created), httpx.ISOTime(updated)
		return c.JSON(customers.Answer{Status: "success", ExternalUser: &u})
	})

	app.Get(BareScenePath+":splatId", func(c *fiber.Ctx) error {
		in, eu, err := auth.keys(c)
		if err != nil {
			return refuse(c, err)
		}
		var sc bareScene
		err = pool.QueryRow(c.UserContext(), BareSceneQuery, c.Params("splatId"), in.id).Scan(
			&sc.ID, &sc.Title, &sc.Description, &sc.ImageURL, &sc.SplatURL, &sc.Visibility, &sc.AllowEmbed,
			&sc.AllowComments, &sc.AllowReactions, &sc.AllowClone, &sc.RemixedFrom, &sc.SplatType, &sc.ExternalUserID,
			&sc.ViewCount, &sc.LikeCount, &sc.FileSizeBytes, &sc.Featured, &sc.FeaturedAt, &sc.CreatedAt, &sc.UpdatedAt,
			&sc.LevelData, &sc.LodFolderKey)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			slog.Error("query failed", "err", err)
			return c.Status(fiber.StatusInternalServerError).JSON(fiber.Map{"status": "error", "message": "query failed"})
		}
		// The product's scoping: with EU, only that customer's scenes and public ones.
		if err != nil || eu != "" && eu != sc.ExternalUserID && sc.Visibility != "public" {
			return c.Status(fiber.StatusNotFound).JSON(fiber.Map{"status": "error", "message": "splat not found"})
		}
		sc.IsOwner = eu != "" && eu == sc.ExternalUserID
		return c.JSON(fiber.Map{"status": "success", "splat": sc})
	})

	mint, err := bareMintHandler(auth)
	if err != nil {
		return err
	}
	app.Post(BareMintPath, mint)
	app.Post(BareViewsPath, bareViewsHandler(pool))

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if err := app.ShutdownWithTimeout(5 * time.Second); err != nil {
		return err
	}
	return <-served
}

// BareServer is a running bare-server child process.
type BareServer struct {
	// URL is the server's base URL.
	URL  string
	proc *spawn.Proc
}

// StartBareServer runs `EXE bare-server` against pgURL as a separate process, so the bare side
// pays the same process boundaries (client → server → Postgres) as the product, and waits
// until it answers.
func StartBareServer(ctx context.Context, exe, pgURL string, poolSize int, logPath string) (*BareServer, error) {
	addr := &firstLine{ch: make(chan string, 1)}
	cmd := exec.Command(exe, "bare-server", "--pg", pgURL, "--addr", "127.0.0.1:0", "--pool", strconv.Itoa(poolSize))
	cmd.Stdout = addr
	// The bare server dies with the benchmark and sits in its own process group, so a terminal
	// Ctrl-C reaches only the benchmark, which then stops its children in order.
	proc, err := spawn.Run(cmd, spawn.Options{Name: "bare server", LogPath: logPath, Group: true, DeathSignal: syscall.SIGKILL})
	if err != nil {
		return nil, err
	}
	b := &BareServer{proc: proc}
	fail := func(err error) (*BareServer, error) {
		_ = proc.Stop(syscall.SIGTERM, 5*time.Second)
		return nil, fmt.Errorf("bare server: %w; log:\n%s", err, testenv.LogTail(logPath, 20))
	}
	select {
	case line := <-addr.ch:
		host, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			return fail(fmt.Errorf("unexpected first line %q", line))
		}
		b.URL = "http://" + host
	case <-proc.Done():
		return fail(fmt.Errorf("exited at start-up (%v)", proc.Err()))
	case <-time.After(30 * time.Second):
		return fail(errors.New("no listen address within 30s"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for i := 0; ; i++ {
		resp, err := client.Get(b.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b, nil
			}
		}
		if i >= 100 || ctx.Err() != nil {
			return fail(fmt.Errorf("not healthy: %v", err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the bare server down (SIGTERM, killed after 10 s). A kill or a non-zero exit is an
// error: a clean shutdown is part of what the benchmark checks.
func (b *BareServer) Stop() error {
	if err := b.proc.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		return err
	}
	return b.proc.ExitErr()
}

// firstLine is a child's stdout that hands on its first line and discards the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
	ch   chan string
}

// Write implements io.Writer.
func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent {
		return len(p), nil
	}
	f.buf.Write(p)
	if line, _, ok := bytes.Cut(f.buf.Bytes(), []byte("\n")); ok {
		f.ch <- strings.TrimSpace(string(line))
		f.sent = true
	}
	return len(p), nil
}
