package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/splathost/splathost/internal/config"
	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/media"
)

// Rendition goals (issue 14): a rendition at most a tenth of the degree-3 training PLY it
// comes from, and at most a third of the same scene's PLY without harmonics.
var (
	GoalRenditionVsTraining = &Goal{AtLeast: true, Target: 10, Unit: "× smaller"}
	GoalRenditionVsPlain    = &Goal{AtLeast: true, Target: 3, Unit: "× smaller"}
)

// DefaultRenditionSizes are the generated scenes of the rendition measures, in Gaussians.
var DefaultRenditionSizes = []int{100_000, 1_000_000, 3_000_000}

// renditionRows converts generated training scenes (the standing scene, degree-3 harmonics,
// 248 bytes per Gaussian as training writes them) with the media worker's own pipeline and
// converter settings: time, Gaussians/s, the size ratios against the training PLY and against a
// PLY without harmonics, and the peak memory of the converter and of the Go side (decimation,
// poster), measured in this process with its high-water mark reset first.
func (r *runner) renditionRows(ctx context.Context, sizes []int) []Row {
	var rows []Row
	fail := func(n int, err error) {
		for _, name := range []string{"rendition time", "rendition size vs training PLY", "rendition size vs PLY without SH"} {
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
		start := time.Now()
		res, err := p.Run(ctx, src, ".ply", work, &media.PosterOptions{}, nil)
		took := time.Since(start)
		goPeak := peakRSS()
		_ = os.RemoveAll(work)
		_ = os.Remove(src)
		if err != nil {
			fail(n, err)
			continue
		}
		name := gaussians(n)
		rows = append(rows,
			Row{Name: "rendition time (" + name + ")", Value: took.Seconds(), Unit: "s",
				Notes: fmt.Sprintf("%s keeping %d of 3 SH bands, %.0f Gaussians/s; peak RSS converter %d MiB, media worker (decimation, poster) %d MiB",
					res.Type, res.SHBands, float64(n)/took.Seconds(), res.PeakRSS>>20, goPeak>>20)},
			Row{Name: "rendition size vs training PLY (" + name + ")", Value: float64(fi.Size()) / float64(res.Bytes), Unit: "× smaller",
				Goal: GoalRenditionVsTraining, Notes: fmt.Sprintf("%d MB -> %.1f MB %s", fi.Size()/1e6, float64(res.Bytes)/1e6, res.Type)},
			Row{Name: "rendition size vs PLY without SH (" + name + ")", Value: float64(plainBytes) / float64(res.Bytes), Unit: "× smaller",
				Goal: GoalRenditionVsPlain, Notes: fmt.Sprintf("%d MB -> %.1f MB", plainBytes/1e6, float64(res.Bytes)/1e6)},
		)
	}
	return rows
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
