package media

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Pipeline turns a scene file into its rendition on local disk: the media worker runs it
// between a download and an upload, the benchmarks run it on generated scenes.
type Pipeline struct {
	// Transform runs splat-transform with the deployment's bounds.
	Transform Transform
	// LODMin is the Gaussian count from which the rendition is a Streamed SOG.
	LODMin int
	// LODCoarsest is the Gaussian count of a Streamed SOG's coarsest level, the one a viewer
	// draws first; 0 means LODCoarsest.
	LODCoarsest int
}

// Rendition is what a pipeline run wrote under its output folder.
type Rendition struct {
	// Type is "sog" (Main is scene.sog) or "lod" (Main is lod/lod-meta.json).
	Type string
	Main string
	// Files maps each written file's path relative to the output folder (slash-separated) to
	// its local path; Bytes is their total size. The poster is not among them.
	Files map[string]string
	Bytes int64
	// SHBands is the harmonics bands the rendition kept: all of the upload's (its SHDegree).
	SHBands int
	// SH is how close the rendition's harmonics are to the upload's (zero without harmonics).
	SH HarmonicsStats
	// Gaussians is the scene's count; Poster the poster's local path ("" without one), or
	// PosterError why it could not be rendered (the rendition stands without it).
	Gaussians   int64
	Poster      string
	PosterError string
	// PeakRSS is the largest resident size of a converter run, in bytes.
	PeakRSS int64
}

// Run converts src (a .ply, .splat or .ksplat file; format is its extension) in work, a
// scratch folder of the caller's. With poster set it also renders the poster. progress gets the
// phase and the converter's lines. Errors of the input are *InputError or *RunError.
func (p Pipeline) Run(ctx context.Context, src, format, work string, poster *PosterOptions, progress func(phase, line string)) (Rendition, error) {
	if progress == nil {
		progress = func(string, string) {}
	}
	var peak int64
	run := func(phase string, args ...string) error {
		progress(phase, "")
		rss, err := p.Transform.RunPeak(ctx, func(line string) { progress(phase, line) }, args...)
		peak = max(peak, rss)
		return err
	}

	// Decimation and the poster read plain 3DGS PLYs; anything else (.splat, .ksplat, a
	// compressed PLY) is normalised by the converter first, harmonics and all.
	plain := src
	head, err := StatPLY(src)
	if format != ".ply" || err != nil || !head.Plain {
		plain = filepath.Join(work, "plain.ply")
		if err := run("normalising", src, plain); err != nil {
			return Rendition{}, err
		}
		if head, err = StatPLY(plain); err != nil {
			return Rendition{}, &InputError{Err: err}
		}
		if !head.Plain {
			return Rendition{}, &InputError{Err: errors.New("the converter's PLY is not a plain 3DGS PLY: " + head.NotPlain)}
		}
	}
	if head.Vertices < 1 {
		return Rendition{}, &InputError{Err: errors.New("the scene holds no Gaussians")}
	}
	// Gaussians with NaN or ±Inf go before anything reads them; a scene of nothing else fails.
	finite := filepath.Join(work, "finite.ply")
	kept, dropped, err := DropNonFinite(plain, finite)
	if errors.Is(err, ErrNoFiniteGaussians) {
		return Rendition{}, &InputError{Err: err}
	}
	if err != nil {
		return Rendition{}, err
	}
	if dropped > 0 {
		progress("filtering", fmt.Sprintf("dropped %d of %d Gaussians holding NaN or infinite values", dropped, head.Vertices))
		plain, head.Vertices = finite, int64(kept)
	}

	out := filepath.Join(work, "out")
	res := Rendition{Gaussians: head.Vertices, SHBands: head.SHDegree}
	// splat-transform writes everything but the harmonics (its CPU palette training is brute
	// force: minutes for tens of thousands of Gaussians); AddHarmonics adds them after, every
	// band at every level (media/shpalette).
	var keepSH []string
	if head.SHDegree > 0 {
		keepSH = []string{"-H", "0"}
	}
	levels := []string{plain}
	if head.Vertices >= int64(p.LODMin) {
		// Streamed SOG: level 0 is the scene, then fewer Gaussians a level down to the coarsest,
		// a few thousand for the whole scene, which splat-transform writes as one small file
		// (its chunks hold up to 512 Ki Gaussians of one level): a viewer draws the whole scene
		// from it first, then refines.
		coarsest := p.LODCoarsest
		if coarsest <= 0 {
			coarsest = LODCoarsest
		}
		args := append(append([]string{plain}, keepSH...), "-l", "0")
		for i, keep := range LODLevels(int(head.Vertices), coarsest) {
			progress("decimating", fmt.Sprintf("level %d: %d Gaussians", i+1, keep))
			lvl := filepath.Join(work, fmt.Sprintf("level%d.ply", i+1))
			if _, err := Decimate(plain, lvl, keep); err != nil {
				return Rendition{}, &InputError{Err: err}
			}
			args = append(append(append(args, lvl), keepSH...), "-l", fmt.Sprint(i+1))
			levels = append(levels, lvl)
		}
		if err := run("converting", append(args, filepath.Join(out, "lod", "lod-meta.json"))...); err != nil {
			return Rendition{}, err
		}
		res.Type, res.Main = "lod", "lod/lod-meta.json"
	} else {
		if err := run("converting", append(append([]string{plain}, keepSH...), filepath.Join(out, "scene.sog"))...); err != nil {
			return Rendition{}, err
		}
		res.Type, res.Main = "sog", "scene.sog"
	}
	if head.SHDegree > 0 {
		progress("harmonics", "")
		if res.SH, err = AddHarmonics(out, res.Main, levels, head.SHDegree); err != nil {
			return Rendition{}, &InputError{Err: fmt.Errorf("adding the harmonics: %w", err)}
		}
	}
	if res.Files, res.Bytes, err = listFiles(out); err != nil {
		return Rendition{}, err
	}
	if _, ok := res.Files[res.Main]; !ok {
		return Rendition{}, &InputError{Err: errors.New("the converter wrote no " + res.Main)}
	}
	res.PeakRSS = peak

	if poster != nil {
		progress("rendering poster", "")
		// A poster is a nicety: a scene it cannot be rendered for (a camera the rasteriser
		// refuses) still gets its rendition.
		jpg, err := RenderPoster(plain, *poster)
		if err != nil {
			res.PosterError = err.Error()
			return res, nil
		}
		res.Poster = filepath.Join(work, "poster.jpg")
		if err := os.WriteFile(res.Poster, jpg, 0o600); err != nil {
			return Rendition{}, err
		}
	}
	return res, nil
}

// listFiles maps every file under dir to its local path, keyed by its slash-separated path
// relative to dir, and sums their sizes.
func listFiles(dir string) (map[string]string, int64, error) {
	files := map[string]string{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = p
		total += fi.Size()
		return nil
	})
	return files, total, err
}
