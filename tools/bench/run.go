// Package bench is splathost's benchmark: the gateway's authenticated customer and scene reads
// against a bare Fiber + pgx server doing the same query on the same Postgres, a 20 000-file LOD
// upload request against a bare presigning loop, commits of one customer under contention (and
// that they never overshoot its quota), one suspending PUT that archives a customer's scenes, clone
// jobs of a 5 000-object LOD folder and of a 200 MB file against the store's own CopyObject, the
// dev stack's ready time cold and warm, and the idle memory of every stack process. Every measure
// is compared with a goal; a missed goal is reported, never an error, because a slow machine is
// not a fault.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/splathost/splathost/internal/testenv"
)

// Goals of the benchmark.
var (
	// GoalAllInOne is the least gateway/bare throughput ratio with every service in one process.
	GoalAllInOne = &Goal{AtLeast: true, Target: 0.70, Unit: "× bare"}
	// GoalSplit is the least ratio with the services in separate processes (one more hop).
	GoalSplit = &Goal{AtLeast: true, Target: 0.50, Unit: "× bare"}
	// GoalLODUpload caps the wall time of a 20 000-file lod-folder request over presigning as
	// many URLs in a bare loop.
	GoalLODUpload = &Goal{Target: 1.5, Unit: "× bare"}
	// GoalOvershoot is the storage a customer may end up over its allocation: none.
	GoalOvershoot = &Goal{Target: 0, Unit: "B"}
	// GoalCloneLOD is the least objects/s of a LOD folder's clone job over the store's raw
	// CopyObject rate at the job's concurrency.
	GoalCloneLOD = &Goal{AtLeast: true, Target: 0.80, Unit: "× bare"}
	// GoalCloneFile caps a single-file clone's wall time over one raw CopyObject of the file.
	GoalCloneFile = &Goal{Target: 1.2, Unit: "× bare"}
	// GoalServiceRSS caps the idle memory of each splathost service binary.
	GoalServiceRSS = &Goal{Target: 40, Unit: "MiB"}
	// GoalStackRSS caps the idle memory of the whole stack.
	GoalStackRSS = &Goal{Target: 700, Unit: "MiB"}
)

// serviceNames are the split-mode product binaries that GoalServiceRSS applies to.
var serviceNames = map[string]bool{"gateway": true, "user": true, "scene": true, "session": true, "worker": true}

// maxFailureFraction is the share of failed requests above which a load run counts as broken:
// a plain read of one row should not fail under a load of a few dozen connections.
const maxFailureFraction = 0.01

// runner carries one run's options and collects its results.
type runner struct {
	o        Options
	dir      string
	problems []error
	// keepLogs keeps the data directory, as Keep does, because a measure failed in a way only
	// the stack's logs can explain (a rendition that never came, edits a room lost).
	keepLogs bool
}

// Run performs every measure and returns the report. It never stops at the first failure: a
// measure that fails becomes an error row and the rest still run, so one report shows all that
// could be measured. Only a cancelled ctx ends it early.
func Run(ctx context.Context, o Options) Report {
	start := time.Now()
	r := &runner{o: o}
	rep := Report{Settings: map[string]string{
		"concurrency": strconv.Itoa(o.Concurrency), "warmup": o.Warmup.String(), "duration": o.Duration.String(),
		"pool": strconv.Itoa(o.PoolSize), "idle": o.Idle.String(), "memory unit": "MiB of VmRSS",
		"rounds": strconv.Itoa(o.rounds()),
	}}

	tputAll := Row{Name: "GET /api/v1/external-user, allinone", Unit: "req/s", Goal: GoalAllInOne}
	tputSplit := Row{Name: "GET /api/v1/external-user, split", Unit: "req/s", Goal: GoalSplit}
	sceneAll := Row{Name: "GET /api/v1/splats/{id}, allinone", Unit: "req/s", Goal: GoalAllInOne}
	sceneSplit := Row{Name: "GET /api/v1/splats/{id}, split", Unit: "req/s", Goal: GoalSplit}
	mintAll := Row{Name: "P2 POST /api/editor/embed-sessions (viewer), allinone", Unit: "req/s", Goal: GoalAllInOne}
	mintSplit := Row{Name: "P2 POST /api/editor/embed-sessions (viewer), split", Unit: "req/s", Goal: GoalSplit}
	viewsAll := Row{Name: "P4 POST /api/embed/views, allinone", Unit: "req/s", Goal: GoalAllInOne}
	lostAll := Row{Name: "P4 acknowledged views missing after the drain, allinone", Unit: "views", Goal: GoalLostViews}
	trendP50 := Row{Name: fmt.Sprintf("P3 GET /api/v1/splats/trending p50, %d M events / %d days / %d scenes", trendEvents/1_000_000, trendDays, trendScenes),
		Unit: "ms", Goal: GoalTrendingVsNaive}
	trendP99 := Row{Name: "P3 GET /api/v1/splats/trending p99 (bare: slowest naive run)", Unit: "ms"}
	trendCold := Row{Name: "P3 GET /api/v1/splats/trending, scores not cached in the process", Unit: "ms", Goal: GoalTrendingUncached}
	trendFresh := Row{Name: "P3 GET /api/v1/splats/trending, first request of a window (ranked on the spot)", Unit: "ms"}
	lodAll := Row{Name: fmt.Sprintf("POST /api/v1/uploads/lod-folder, %d files, allinone", lodFiles), Unit: "ms", Goal: GoalLODUpload}
	commitsAll := Row{Name: fmt.Sprintf("POST /api/v1/splats, %d concurrent, room for %d, allinone", commitTries, commitRoom), Unit: "commits/s"}
	idemAll := Row{Name: "POST /api/v1/splats with an Idempotency-Key (bare: without), allinone", Unit: "commits/s"}
	overshootAll := Row{Name: "quota overshoot after the concurrent commits, allinone", Unit: "B", Goal: GoalOvershoot}
	nArchive := o.archiveScenes()
	archiveWall := Row{Name: fmt.Sprintf("PUT /api/v1/external-user suspended, archives %d scenes, allinone", nArchive), Unit: "ms"}
	archiveRate := Row{Name: fmt.Sprintf("scenes archived per second by that PUT (%d), allinone", nArchive), Unit: "scenes/s"}
	cloneLODAll := Row{Name: "clone of a 5 000-object LOD folder, allinone", Unit: "objects/s", Goal: GoalCloneLOD}
	cloneFileAll := Row{Name: "clone of a single 200 MB file, allinone", Unit: "ms", Goal: GoalCloneFile}
	measured := []*Row{&tputAll, &tputSplit, &sceneAll, &sceneSplit, &mintAll, &mintSplit, &viewsAll, &lostAll, &trendP50, &trendP99, &trendCold, &trendFresh,
		&lodAll, &commitsAll, &overshootAll, &idemAll, &archiveWall, &archiveRate, &cloneLODAll, &cloneFileAll}
	readyCold := Row{Name: "stack ready, cold data dir (split)", Unit: "ms"}
	readyWarm := Row{Name: "stack ready, warm restart (split)", Unit: "ms"}
	readyAll := Row{Name: "stack ready, warm restart (allinone)", Unit: "ms"}
	readyRooms := Row{Name: "stack ready, warm restart (split, 2 gateways, 2 sessions)", Unit: "ms"}
	rooms := newRoomRows()
	limiter := newRateLimitRows("split")
	ttff := newTTFFRows()
	lanes := newLanesRows()
	mp := newMultipartRows()
	lodCommit := newLODCommitRows()
	hooks := newWebhookRows()
	purges := newPurgeRows("allinone")
	var renditions []Row
	var memSplit, memAll, scaleout []Row

	dir, err := os.MkdirTemp(o.TempDir, "splathost-bench-")
	if err == nil {
		// Postgres runs as the postgres user and must reach its data directory.
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		failRows(err, append(measured, &readyCold, &readyWarm, &readyAll, &readyRooms)...)
		for _, rows := range [][]*Row{rooms.all(), mp.all(), ttff.all(), hooks.all(), limiter.all(), lodCommit.all()} {
			failRows(err, rows...)
		}
	} else {
		r.dir = dir
		sizes := o.RenditionSizes
		if len(sizes) == 0 {
			sizes = DefaultRenditionSizes
		}
		// done ends a run of one section with its rows.
		done := func(rows ...Row) Report {
			r.cleanup()
			rep.Rows = append(rep.Rows, rows...)
			rep.Problems = r.problems
			rep.Elapsed = time.Since(start)
			return rep
		}
		if o.RenditionsOnly {
			return done(r.renditionRows(ctx, sizes)...)
		}
		// only ends a run of one section: its rows, then its stack's ready time.
		only := func(rows []*Row, ready Row) Report { return done(append(values(rows), ready)...) }
		if o.MultipartOnly {
			readyMP := Row{Name: "stack ready (allinone, multipart measure)", Unit: "ms"}
			r.multipartPhase(ctx, &readyMP, mp)
			return only(mp.all(), readyMP)
		}
		if o.RoomsOnly {
			r.roomPhase(ctx, &readyRooms, rooms)
			return only(rooms.all(), readyRooms)
		}
		if o.WebhooksOnly {
			readyHooks := Row{Name: "stack ready, cold data dir (allinone, webhook measure)", Unit: "ms"}
			r.webhookPhase(ctx, &readyHooks, hooks)
			return only(hooks.all(), readyHooks)
		}
		if o.IdempotencyOnly {
			readyIdem := Row{Name: "stack ready (allinone, idempotent commit measure)", Unit: "ms"}
			r.phase(ctx, "allinone", &readyIdem, func(st *testenv.Stack) {
				r.withTenant(st, "idempotency", func(t Tenant) { r.idemCommitRows(ctx, st, t, &idemAll) }, &idemAll)
			})
			if readyIdem.Err != nil {
				idemAll.Err = readyIdem.Err
			}
			return only([]*Row{&idemAll}, readyIdem)
		}
		if o.CloneOnly {
			readyClone := Row{Name: "stack ready (allinone, clone measures)", Unit: "ms"}
			r.clonePhase(ctx, &readyClone, &cloneLODAll, &cloneFileAll)
			return only([]*Row{&cloneLODAll, &cloneFileAll}, readyClone)
		}
		if o.PurgeOnly {
			readyPurge := Row{Name: "stack ready (allinone, purge measure)", Unit: "ms"}
			if !r.phase(ctx, "allinone", &readyPurge, func(st *testenv.Stack) {
				r.withTenant(st, "purge", func(t Tenant) { r.purgeLatency(ctx, st, t, purges) }, purges.all()...)
			}) {
				failRows(readyPurge.Err, purges.all()...)
			}
			return only(purges.all(), readyPurge)
		}
		if o.LODCommitOnly {
			readyLC := Row{Name: "stack ready (allinone, LOD commit measure)", Unit: "ms"}
			r.lodCommitPhase(ctx, &readyLC, lodCommit)
			return only(lodCommit.all(), readyLC)
		}
		if o.MemoryOnly {
			readyMem := Row{Name: "stack ready, cold data dir (split, memory measure)", Unit: "ms"}
			rep.Rows = append(rep.Rows, r.memoryPhase(ctx, &readyMem)...)
			return only(nil, readyMem)
		}
		if o.TrendingOnly {
			readyTrend := Row{Name: "stack ready (allinone, trending measure)", Unit: "ms"}
			trend := []*Row{&trendP50, &trendP99, &trendCold, &trendFresh}
			r.phase(ctx, "allinone", &readyTrend, func(st *testenv.Stack) {
				r.withTenant(st, "trending", func(t Tenant) { r.trendingScale(ctx, st, t, &trendP50, &trendP99, &trendCold, &trendFresh) }, trend...)
			})
			if readyTrend.Err != nil {
				failRows(readyTrend.Err, trend...)
			}
			return only(trend, readyTrend)
		}
		if o.ScaleOnly {
			return done(r.scaleTierRows(ctx)...)
		}
		if o.ScaleoutOnly {
			return done(r.scaleoutRows(ctx)...)
		}
		if o.RateLimitOnly {
			readyRL := Row{Name: "stack ready (split, rate limiter measure)", Unit: "ms"}
			if !r.phase(ctx, "split", &readyRL, func(st *testenv.Stack) {
				r.withTenant(st, "ratelimit", func(t Tenant) { r.rateLimit(ctx, st, "split", t, limiter) }, limiter.all()...)
			}) {
				failRows(readyRL.Err, limiter.all()...)
			}
			return only(limiter.all(), readyRL)
		}
		if o.LanesOnly {
			readyLanes := Row{Name: "stack ready (split, rendition lanes measure)", Unit: "ms"}
			r.lanesPhase(ctx, &readyLanes, lanes)
			return only(lanes.all(), readyLanes)
		}
		if o.TTFFOnly {
			readyTTFF := Row{Name: "stack ready (split, time-to-first-frame measure)", Unit: "ms"}
			r.ttffPhase(ctx, &readyTTFF, ttff)
			return only(ttff.all(), readyTTFF)
		}
		// The gateway comparisons of one stack: a customer read, a scene read, a viewer mint.
		gateway := func(st *testenv.Stack, mode string, tput, scene, mint *Row) {
			r.withTenant(st, mode, func(t Tenant) {
				r.throughput(ctx, st, mode, t, tput)
				r.sceneRead(ctx, st, mode, t, scene)
				r.mintSessions(ctx, st, mode, t, mint)
			}, tput, scene, mint)
		}
		if o.GatewayOnly {
			rows := []*Row{&tputSplit, &tputAll, &sceneSplit, &sceneAll, &mintSplit, &mintAll}
			for _, m := range []struct {
				mode              string
				ready             *Row
				tput, scene, mint *Row
			}{{"split", &readyCold, &tputSplit, &sceneSplit, &mintSplit}, {"allinone", &readyAll, &tputAll, &sceneAll, &mintAll}} {
				if !r.phase(ctx, m.mode, m.ready, func(st *testenv.Stack) { gateway(st, m.mode, m.tput, m.scene, m.mint) }) {
					m.tput.Err, m.scene.Err, m.mint.Err = m.ready.Err, m.ready.Err, m.ready.Err
				}
			}
			return done(append(values(rows), readyCold, readyAll)...)
		}
		// Phase 1, split on a fresh directory: cold ready time, idle memory, throughput.
		coldOK := r.phase(ctx, "split", &readyCold, func(st *testenv.Stack) {
			memSplit = r.memoryRows(ctx, st, "split")
			gateway(st, "split", &tputSplit, &sceneSplit, &mintSplit)
			r.withTenant(st, "ratelimit", func(t Tenant) { r.rateLimit(ctx, st, "split", t, limiter) }, limiter.all()...)
		})
		if !coldOK {
			memSplit = []Row{{Name: "idle RSS (split)", Unit: "MiB", Goal: GoalStackRSS, Err: readyCold.Err}}
			tputSplit.Err, sceneSplit.Err, mintSplit.Err = readyCold.Err, readyCold.Err, readyCold.Err
			failRows(readyCold.Err, limiter.all()...)
		}
		// Phase 2, the same directory again: the warm restart a developer sees every day.
		if coldOK {
			r.phase(ctx, "split", &readyWarm, func(*testenv.Stack) {})
		} else {
			readyWarm.Err = errors.New("skipped: the cold start failed")
		}
		// Phase 3, all services in one process on the same (warm) directory.
		if !r.phase(ctx, "allinone", &readyAll, func(st *testenv.Stack) {
			memAll = r.memoryRows(ctx, st, "allinone")
			r.withTenant(st, "allinone", func(t Tenant) {
				r.throughput(ctx, st, "allinone", t, &tputAll)
				r.sceneRead(ctx, st, "allinone", t, &sceneAll)
				r.mintSessions(ctx, st, "allinone", t, &mintAll)
				r.viewBeacons(ctx, st, "allinone", t, &viewsAll, &lostAll)
				r.lodUpload(ctx, st, t, &lodAll)
				r.multipart(ctx, st, t, mp)
				r.commitRace(ctx, st, "allinone", t, &commitsAll, &overshootAll)
				r.idemCommitRows(ctx, st, t, &idemAll)
				// Before the archive: its 1 000 retention workflow starts keep the worker busy for
				// a while after the PUT, and the clone jobs run on the same worker.
				r.cloneJobs(ctx, st, "allinone", t, &cloneLODAll, &cloneFileAll)
				r.lodCommits(ctx, st, t, lodCommit)
				r.archiveSuspend(ctx, st, "allinone", t, &archiveWall, &archiveRate)
				r.purgeLatency(ctx, st, t, purges)
				// Last: it leaves 10 M events and 10 000 scenes behind.
				r.trendingScale(ctx, st, t, &trendP50, &trendP99, &trendCold, &trendFresh)
			}, append([]*Row{&tputAll, &sceneAll, &mintAll, &viewsAll, &lostAll, &trendP50, &trendP99, &trendCold, &trendFresh, &lodAll, &commitsAll,
				&overshootAll, &idemAll, &archiveWall, &archiveRate, &cloneLODAll, &cloneFileAll, &mp.single, &mp.parts, &purges.p50, &purges.p99}, lodCommit.all()...)...)
		}) {
			failRows(readyAll.Err, lodCommit.all()...)
			memAll = []Row{{Name: "idle RSS (allinone)", Unit: "MiB", Goal: GoalStackRSS, Err: readyAll.Err}}
			for _, row := range []*Row{&tputAll, &sceneAll, &mintAll, &viewsAll, &lostAll, &trendP50, &trendP99, &trendCold, &trendFresh,
				&lodAll, &commitsAll, &overshootAll, &idemAll, &archiveWall, &archiveRate, &cloneLODAll, &cloneFileAll, &mp.single, &mp.parts,
				&purges.p50, &purges.p99} {
				row.Err = readyAll.Err
			}
		}
		// Phase 4, split with two gateways on two session processes, cold: the multiplayer room.
		r.roomPhase(ctx, &readyRooms, rooms)
		// Phase 5, no stack: the media worker's conversion pipeline on generated scenes.
		renditions = r.renditionRows(ctx, sizes)
		// Phase 6, split, cold, renditions on: the viewer's first frame in Chromium, upload against rendition.
		var readyTTFF Row
		r.ttffPhase(ctx, &readyTTFF, ttff)
		// Phase 6b, split, cold, renditions on: a small scene beside a large conversion.
		var readyLanes Row
		r.lanesPhase(ctx, &readyLanes, lanes)
		// Phase 7, all-in-one on a fresh directory: webhook deliveries end to end.
		var readyHooks Row
		r.webhookPhase(ctx, &readyHooks, hooks)
		// Phase 8, two split stacks at once: 1 against 2 of each product binary.
		scaleout = r.scaleoutRows(ctx)
		r.cleanup()
	}

	rep.Rows = append(rep.Rows, tputAll, tputSplit, sceneAll, sceneSplit, mintAll, mintSplit, viewsAll, lostAll, trendP50, trendP99, trendCold,
		trendFresh, lodAll, commitsAll, overshootAll, idemAll, archiveWall, archiveRate, cloneLODAll, cloneFileAll, mp.single, mp.parts,
		purges.p50, purges.p99)
	rep.Rows = append(rep.Rows, values(lodCommit.all())...)
	rep.Rows = append(rep.Rows, values(limiter.all())...)
	rep.Rows = append(rep.Rows, values(rooms.all())...)
	rep.Rows = append(rep.Rows, renditions...)
	rep.Rows = append(rep.Rows, values(append(append(ttff.all(), lanes.all()...), hooks.all()...))...)
	rep.Rows = append(rep.Rows, scaleout...)
	rep.Rows = append(rep.Rows, readyCold, readyWarm, readyAll, readyRooms)
	rep.Rows = append(rep.Rows, memSplit...)
	rep.Rows = append(rep.Rows, memAll...)
	rep.Problems = r.problems
	rep.Elapsed = time.Since(start)
	return rep
}

// values copies the rows a section filled in through pointers into the report's order.
func values(rows []*Row) []Row {
	out := make([]Row, len(rows))
	for i, row := range rows {
		out[i] = *row
	}
	return out
}
