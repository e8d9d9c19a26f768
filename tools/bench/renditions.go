package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// Rendition goals (issue 14): a rendition at most a tenth of the degree-3 training PLY it
// comes from, and at most a third of the same scene's PLY without harmonics. Issue 37: with
// every harmonic band kept, a 1 M-Gaussian scene's whole rendition in 3 minutes and a 3 M one
// in 8 on 2 cores, at most 2 GiB resident.
var (
	GoalRenditionVsTraining = &Goal{AtLeast: true, Target: 10, Unit: "× smaller"}
	GoalRenditionVsPlain    = &Goal{AtLeast: true, Target: 3, Unit: "× smaller"}
	GoalRenditionTime1M     = &Goal{Target: 180, Unit: "s"}
	GoalRenditionTime3M     = &Goal{Target: 480, Unit: "s"}
	GoalRenditionRSS        = &Goal{Target: 2048, Unit: "MiB"}
)

// DefaultRenditionSizes are the generated scenes of the rendition measures, in Gaussians.
var DefaultRenditionSizes = []int{20_000, 1_000_000, 3_000_000}

// ownPaletteMax is the largest scene also converted by splat-transform's own CPU palette for
// comparison: its brute-force k-means takes minutes beyond.
const ownPaletteMax = 20_000

// renditionRows converts generated training scenes (the standing scene, degree-3 harmonics,
// 248 bytes per Gaussian as training writes them) with the media worker's own pipeline and
// converter settings: time, Gaussians/s, the size ratios against the training PLY and against a
// PLY without harmonics, the peak memory of the converter and of the Go side (decimation, SH
// palette, poster), measured in this process with its high-water mark reset first, and the SH
// reconstruction error. Up to ownPaletteMax Gaussians the same scene is also converted by
// splat-transform alone (its own CPU palette), as ratios.
func (r *runner) renditionRows(ctx context.Context, sizes []int) []Row {
	var rows []Row
	fail := func(n int, err error) {
		for _, name := range []string{"rendition time", "rendition peak RSS", "rendition SH RMSE", "rendition size vs training PLY", "rendition size vs PLY without SH"} {
			rows = append(rows, Row{Name: fmt.Sprintf("%s (%s)", name, gaussians(n)), Err: err})
		}
	}
	cfg, err := config.Load()
	if err != nil {
		fail(0, err)
		return rows
	}
	// The media worker's own converter, with its bounds and version check.
	conv, err := media.Converter(ctx, cfg)
	if err != nil {
		fail(0, err)
		return rows
	}
	dir, err := os.MkdirTemp(r.o.TempDir, "splathost-renditions-")
	if err != nil {
		fail(0, err)
		return rows
	}
	defer os.RemoveAll(dir)
	p := media.Pipeline{Transform: conv, LODMin: cfg.RenditionLODMin}
	stand := fixtures.Gen{Seed: fixtures.DefaultSeed, Scene: fixtures.SceneStand}
	for _, n := range sizes {
		if ctx.Err() != nil {
			fail(n, ctx.Err())
			continue
		}
		log := r.o.Log.With("gaussians", n)
		src := filepath.Join(dir, fmt.Sprintf("scene-%d.ply", n))
		log.Info("writing the training PLY")
		if err := writeTraining(stand, src, n); err != nil {
			fail(n, err)
			continue
		}
		fi, err := os.Stat(src)
		if err != nil {
			fail(n, err)
			continue
		}
		plainBytes := int64(n)*int64(fixtures.TrainingPLYStride(0)) + 400 // the same scene without harmonics
		work, err := os.MkdirTemp(dir, "work-")
		if err != nil {
			fail(n, err)
			continue
		}
		resetPeakRSS()
		log.Info("converting")
		// The phases' start times: the harmonics' share, and the time before the poster (what
		// splat-transform alone is compared with).
		// (progress comes from the converter's output reader too.)
		// The CPU time this process spent in each phase says what the palettes cost whatever
		// else the machine runs.
		phases, cpu := map[string]time.Time{}, map[string]time.Duration{}
		var mu sync.Mutex
		start := time.Now()
		res, err := p.Run(ctx, src, ".ply", work, &media.PosterOptions{}, func(phase, _ string) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := phases[phase]; !ok {
				phases[phase], cpu[phase] = time.Now(), selfCPU()
			}
		})
		took := time.Since(start)
		goPeak := peakRSS()
		_ = os.RemoveAll(work)
		if err != nil {
			_ = os.Remove(src)
			fail(n, err)
			continue
		}
		name := gaussians(n)
		shTook, noPoster := phases["rendering poster"].Sub(phases["harmonics"]), phases["rendering poster"].Sub(start)
		shCPU := cpu["rendering poster"] - cpu["harmonics"]
		// The size goals are for 100 k Gaussians and more: below, the SH palette (up to a
		// centroid per Gaussian) weighs most.
		trainingGoal, plainGoal := GoalRenditionVsTraining, GoalRenditionVsPlain
		if n < 100_000 {
			trainingGoal, plainGoal = nil, nil
		}
		var timeGoal *Goal
		switch n {
		case 1_000_000:
			timeGoal = GoalRenditionTime1M
		case 3_000_000:
			timeGoal = GoalRenditionTime3M
		}
		rows = append(rows,
			Row{Name: "rendition time (" + name + ")", Value: took.Seconds(), Unit: "s", Goal: timeGoal,
				Notes: fmt.Sprintf("%s keeping %d of 3 SH bands, %.0f Gaussians/s; SH palettes %.1f s of it (%.1f s of CPU)",
					res.Type, res.SHBands, float64(n)/took.Seconds(), shTook.Seconds(), shCPU.Seconds())},
			Row{Name: "rendition peak RSS (" + name + ")", Value: float64(max(res.PeakRSS, goPeak) >> 20), Unit: "MiB", Goal: GoalRenditionRSS,
				Notes: fmt.Sprintf("converter %d MiB, media worker (decimation, SH palettes, poster) %d MiB", res.PeakRSS>>20, goPeak>>20)},
			Row{Name: "rendition SH RMSE (" + name + ")", Value: res.SH.RMSE(), Unit: "",
				Notes: fmt.Sprintf("decoded coefficients against the upload's over %d Gaussians of every level (%d unmatched); without harmonics %.4f",
					res.SH.Gaussians, res.SH.Unmatched, res.SH.FlatRMSE())},
			Row{Name: "rendition size vs training PLY (" + name + ")", Value: float64(fi.Size()) / float64(res.Bytes), Unit: "× smaller",
				Goal: trainingGoal, Notes: fmt.Sprintf("%d MB -> %.1f MB %s", fi.Size()/1e6, float64(res.Bytes)/1e6, res.Type)},
			Row{Name: "rendition size vs PLY without SH (" + name + ")", Value: float64(plainBytes) / float64(res.Bytes), Unit: "× smaller",
				Goal: plainGoal, Notes: fmt.Sprintf("%d MB -> %.1f MB", plainBytes/1e6, float64(res.Bytes)/1e6)},
		)
		if n <= ownPaletteMax && res.Type == "sog" {
			rows = append(rows, ownPaletteRows(ctx, conv, src, work, name, noPoster, res)...)
		}
		_ = os.Remove(src)
	}
	return rows
}

// ownPaletteRows converts src with splat-transform alone (its own CPU palette for the
// harmonics) and compares it with our rendition res (which took ours, poster excluded): time,
// bytes and SH RMSE, each as splat-transform's figure over ours.
func ownPaletteRows(ctx context.Context, conv media.Transform, src, work, name string, ours time.Duration, res media.Rendition) []Row {
	names := []string{"splat-transform's own SH palette, time ÷ ours", "splat-transform's own SH palette, bytes ÷ ours", "splat-transform's own SH palette, SH RMSE ÷ ours"}
	fail := func(err error) []Row {
		var rows []Row
		for _, n := range names {
			rows = append(rows, Row{Name: n + " (" + name + ")", Err: err})
		}
		return rows
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(work)
	out := filepath.Join(work, "theirs.sog")
	start := time.Now()
	if err := conv.Run(ctx, nil, src, out); err != nil {
		return fail(err)
	}
	took := time.Since(start)
	fi, err := os.Stat(out)
	if err != nil {
		return fail(err)
	}
	st, err := media.HarmonicsError(work, "theirs.sog", []string{src}, 3)
	if err != nil {
		return fail(err)
	}
	return []Row{
		{Name: names[0] + " (" + name + ")", Value: took.Seconds() / ours.Seconds(), Unit: "×",
			Notes: fmt.Sprintf("%.1f s against %.1f s (poster excluded)", took.Seconds(), ours.Seconds())},
		{Name: names[1] + " (" + name + ")", Value: float64(fi.Size()) / float64(res.Bytes), Unit: "×",
			Notes: fmt.Sprintf("%d B against %d B", fi.Size(), res.Bytes)},
		{Name: names[2] + " (" + name + ")", Value: st.RMSE() / res.SH.RMSE(), Unit: "×",
			Notes: fmt.Sprintf("%.4f against %.4f", st.RMSE(), res.SH.RMSE())},
	}
}

func gaussians(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%d M Gaussians", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%d k Gaussians", n/1000)
	}
	return fmt.Sprintf("%d Gaussians", n)
}

func writeTraining(g fixtures.Gen, path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := g.WriteTrainingPLY(w, n, 3); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// resetPeakRSS resets this process's high-water mark (Linux: clear_refs 5), so peakRSS
// measures what comes after.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is this process's resident high-water mark in bytes (VmHWM).
func peakRSS() int64 {
	kib, _ := procStatusKiB(os.Getpid(), "VmHWM")
	return kib << 10
}
