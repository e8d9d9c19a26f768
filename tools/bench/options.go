package bench

import (
	"log/slog"
	"time"
)

// Options configures a benchmark run.
type Options struct {
	// Runner is the stack runner binary; BinDir holds the product binaries.
	Runner, BinDir string
	// Exe is this binary, run again as the bare server.
	Exe string
	// TempDir is where the stack data directory is created ("" for the system default).
	TempDir string
	// Keep leaves the data directory (with every log) in place.
	Keep bool
	// RoomsOnly runs only the multiplayer room measures (phase 4), on a fresh directory.
	RoomsOnly bool
	// MultipartOnly runs only the multipart upload measure (one PUT against parts of the same
	// file), on an all-in-one stack of its own.
	MultipartOnly bool
	// WebhooksOnly runs only the webhook measures (deliveries/s and event-to-delivery latency)
	// on an all-in-one stack in a fresh directory.
	WebhooksOnly bool
	// RenditionsOnly runs only the rendition measures (phase 5) on scenes of RenditionSizes
	// Gaussians (DefaultRenditionSizes when empty).
	RenditionsOnly bool
	// IdempotencyOnly runs only the idempotent commit measure (keyed against plain commits).
	IdempotencyOnly bool
	// CloneOnly runs only the clone measures (allinone); MemoryOnly only the idle memory (split).
	CloneOnly, MemoryOnly bool
	// PurgeOnly runs only the scene purge measure (clone-then-delete cycles, allinone).
	PurgeOnly bool
	// LODCommitOnly runs only the LOD commit measure (allinone): 2 000- and 20 000-file folders
	// against raw copies, and another tenant's reads meanwhile.
	LODCommitOnly bool
	// ScaleoutOnly runs only the scale-out measure: 1 against 2 of each split binary.
	ScaleoutOnly bool
	// ScaleOnly runs only the tier measures on the cluster shape: 2 gateways against 1 and 2
	// scene services against 1 in one run, capped at TierCPU cores a process and uncapped, then
	// the CPU per request of each process (scaletiers.go).
	ScaleOnly bool
	// TierCPU is the CPU quota, in cores, of each capped process (DefaultTierCPU when zero).
	TierCPU float64
	// TTFFOnly runs only the viewer's time-to-first-frame measure (phase 6), on a fresh
	// directory.
	TTFFOnly bool
	// LanesOnly runs only the rendition lanes measure: a small scene's time to ready alone and
	// beside a large conversion of the same integration (split, fresh directory).
	LanesOnly bool
	// RateLimitOnly runs only the rate limiter's cost (on against off, split).
	RateLimitOnly bool
	// TrendingOnly runs only the trending measure (P3: 10 M events loaded first) on an
	// all-in-one stack.
	TrendingOnly   bool
	RenditionSizes []int
	// Concurrency, Warmup, Duration, MaxRequests and Timeout shape each load run.
	Concurrency      int
	Warmup, Duration time.Duration
	MaxRequests      int64
	Timeout          time.Duration
	// Rounds is how many alternated rounds each gateway/bare comparison runs (RunAB); the
	// median round counts. 3 when zero.
	Rounds int
	// ProfileDir, when set, receives CPU and allocation profiles of the product processes
	// taken during one more (uncounted) gateway run of each comparison; the stack must serve
	// them (config.PprofEnv=1, which the benchmark then sets).
	ProfileDir string
	// GatewayOnly runs only the gateway comparisons (customer read, scene read, viewer mint),
	// split and all-in-one, on a fresh directory.
	GatewayOnly bool
	// PoolSize is the bare server's pgxpool size (the product's is 16).
	PoolSize int
	// Idle is how long a fresh stack sits unused before its memory is read.
	Idle time.Duration
	// ReadyTimeout bounds each stack's start; StopTimeout each stack's shutdown.
	ReadyTimeout, StopTimeout time.Duration
	// ArchiveScenes is how many committed scenes the archive-on-suspend measure archives with
	// one PUT (0 for DefaultArchiveScenes).
	ArchiveScenes int
	// Log receives progress messages (stderr), keeping stdout for the report.
	Log *slog.Logger
}

// tierCPU is TierCPU or its default.
func (o Options) tierCPU() float64 {
	if o.TierCPU > 0 {
		return o.TierCPU
	}
	return DefaultTierCPU
}

// rounds is Rounds or its default.
func (o Options) rounds() int {
	if o.Rounds > 0 {
		return o.Rounds
	}
	return 3
}
