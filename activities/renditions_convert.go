package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/media"
	"github.com/splathost/splathost/workflows/contract"
)

// ConvertRendition downloads the upload, converts it with splat-transform (normalising other
// formats to a PLY first), decimates levels of detail for large scenes, renders the poster and
// uploads everything under the scene's rendition folder; for a .sog or a LOD folder
// (PosterOnly) it renders the poster alone. It is idempotent: the same upload
// gives the same objects under the same keys, so a retry after a crash overwrites what the
// first attempt wrote. A heartbeat every few seconds carries the phase; a worker that dies
// stops heartbeating and another attempt takes over.
func (a *Activities) ConvertRendition(ctx context.Context, in contract.ConvertRenditionInput) (contract.ConvertRenditionResult, error) {
	if a.Renditions == nil {
		return contract.ConvertRenditionResult{}, errors.New("this worker converts no renditions (not a media worker)")
	}
	if in.SceneID == "" || !objectkeys.SafeKey(in.SourceKey) || !objectkeys.SafePrefix(in.Folder) {
		return contract.ConvertRenditionResult{}, badInput("incomplete rendition input for scene %q", in.SceneID)
	}
	// The heartbeat starts before the wait for a slot: a conversion queued behind another is
	// alive, not lost.
	beat := newHeartbeat(ctx)
	defer beat.stop()
	lane := a.Renditions.Lanes.Of(in.SourceBytes)
	beat.set("queued", "lane "+string(lane))
	release, err := a.Renditions.acquire(ctx, lane)
	if err != nil {
		return contract.ConvertRenditionResult{}, err
	}
	defer release()
	work, err := os.MkdirTemp(a.Renditions.WorkDir, "rendition-"+in.SceneID+"-")
	if err != nil {
		return contract.ConvertRenditionResult{}, err
	}
	defer os.RemoveAll(work)
	res, err := a.convert(ctx, in, work, beat)
	if err != nil {
		if msg, input := renditionFailure(err); input {
			return contract.ConvertRenditionResult{}, temporal.NewNonRetryableApplicationError(msg, contract.ErrRenditionInput, nil)
		}
		return contract.ConvertRenditionResult{}, err
	}
	return res, nil
}

func (a *Activities) convert(ctx context.Context, in contract.ConvertRenditionInput, work string, beat *heartbeat) (contract.ConvertRenditionResult, error) {
	if in.PosterOnly {
		return a.posterOnly(ctx, in, work, beat)
	}
	st := a.Renditions
	beat.set("downloading", in.SourceKey)
	src := filepath.Join(work, "source"+in.Format)
	if err := a.download(ctx, in.SourceKey, src); err != nil {
		return contract.ConvertRenditionResult{}, err
	}
	var poster *media.PosterOptions
	if in.Poster {
		// The default size (media.DefaultWidth × DefaultHeight): 16:9 like the viewer's
		// default embed, large enough for a list card.
		poster = &media.PosterOptions{Orientation: in.Orientation, Camera: (*media.Camera)(in.Camera), Background: in.Background}
	}
	r, err := media.Pipeline{Transform: st.Transform, LODMin: st.LODMin}.Run(ctx, src, in.Format, work, poster, beat.set)
	if err != nil {
		return contract.ConvertRenditionResult{}, err
	}
	res := contract.ConvertRenditionResult{Type: r.Type, Key: in.Folder + r.Main, Bytes: r.Bytes, Files: len(r.Files),
		Gaussians: r.Gaussians, PeakRSS: r.PeakRSS}
	upload := make(map[string]string, len(r.Files)+1)
	for rel, f := range r.Files {
		upload[in.Folder+rel] = f
	}
	if r.PosterError != "" && a.Log != nil {
		a.Log.Warn("no poster for the scene; its rendition stands without one", "scene", in.SceneID, "error", r.PosterError)
	}
	if r.Poster != "" {
		res.PosterKey = in.Folder + "poster.jpg"
		upload[res.PosterKey] = r.Poster
	}
	n := 0
	for key, f := range upload {
		n++
		beat.set("uploading", fmt.Sprintf("%d of %d", n, len(upload)))
		if err := a.upload(ctx, key, f); err != nil {
			return contract.ConvertRenditionResult{}, err
		}
	}
	return res, nil
}

// posterOnly renders the poster of an upload that gets no rendition: a .sog, downloaded whole,
// or a LOD folder, of which only lod-meta.json and the SOGs of the level the poster is drawn
// from (media.PosterLevel) are read. The poster is rendered as a PLY's is, from the same
// levelData view, and stored in the scene's rendition folder.
func (a *Activities) posterOnly(ctx context.Context, in contract.ConvertRenditionInput, work string, beat *heartbeat) (contract.ConvertRenditionResult, error) {
	beat.set("downloading", in.SourceKey)
	var parts []media.SOGPart
	switch in.Format {
	case ".sog":
		src := filepath.Join(work, "source.sog")
		if err := a.download(ctx, in.SourceKey, src); err != nil {
			return contract.ConvertRenditionResult{}, err
		}
		files, closeZip, err := media.OpenSOGZip(src)
		if err != nil {
			return contract.ConvertRenditionResult{}, err
		}
		defer closeZip()
		parts = []media.SOGPart{{Files: files, Count: -1}}
	case "lod":
		folder := path.Dir(in.SourceKey) + "/"
		manifest, err := a.folderFiles(ctx, folder, "")(path.Base(in.SourceKey))
		if err != nil {
			return contract.ConvertRenditionResult{}, err
		}
		level, runs, n, err := media.PosterLevel(manifest, media.DefaultMaxSplats)
		if err != nil {
			return contract.ConvertRenditionResult{}, err
		}
		beat.set("downloading", fmt.Sprintf("level %d: %d Gaussians", level, n))
		for _, r := range runs {
			parts = append(parts, media.SOGPart{Files: a.folderFiles(ctx, folder, path.Dir(r.File)), Offset: r.Offset, Count: r.Count})
		}
	default:
		return contract.ConvertRenditionResult{}, badInput("no poster for format %q", in.Format)
	}
	beat.set("rendering poster", "")
	opt := media.PosterOptions{Orientation: in.Orientation, Camera: (*media.Camera)(in.Camera), Background: in.Background}
	jpg, _, err := media.SOGPoster(parts, work, opt)
	if err != nil {
		return contract.ConvertRenditionResult{}, err
	}
	res := contract.ConvertRenditionResult{PosterKey: in.Folder + "poster.jpg"}
	beat.set("uploading", "poster")
	return res, a.upload(ctx, res.PosterKey, jpg)
}

// folderFiles reads the files of a LOD folder's SOG, dir relative to the folder's key prefix
// folder, from the store. A name the manifest or a meta.json gives that leaves the folder (or
// is no key at all), or a file the folder lacks, is the upload's fault.
func (a *Activities) folderFiles(ctx context.Context, folder, dir string) media.SOGFiles {
	return func(name string) ([]byte, error) {
		key := path.Join(folder, dir, name)
		if !strings.HasPrefix(key, folder) || !objectkeys.SafeKey(key) {
			return nil, &media.InputError{Err: fmt.Errorf("lod: %q names a file outside its folder", path.Join(dir, name))}
		}
		obj, err := a.Objects.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key)})
		var missing *s3types.NoSuchKey
		if errors.As(err, &missing) {
			return nil, &media.InputError{Err: fmt.Errorf("lod: the folder has no %s", path.Join(dir, name))}
		}
		if err != nil {
			return nil, fmt.Errorf("fetching %s: %w", key, err)
		}
		defer obj.Body.Close()
		return media.ReadSOGFile(obj.Body, path.Join(dir, name))
	}
}

// download writes an object to a local file.
func (a *Activities) download(ctx context.Context, key, dst string) error {
	obj, err := a.Objects.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("fetching %s: %w", key, err)
	}
	defer obj.Body.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, obj.Body); err != nil {
		f.Close()
		return fmt.Errorf("fetching %s: %w", key, err)
	}
	return f.Close()
}

// upload stores a local file under key, with the type a browser needs to read it.
func (a *Activities) upload(ctx context.Context, key, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = a.Objects.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key),
		Body: f, ContentLength: aws.Int64(fi.Size()), ContentType: aws.String(contentTypeOf(key))})
	if err != nil {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	return nil
}

func contentTypeOf(key string) string {
	switch strings.ToLower(filepath.Ext(key)) {
	case ".json":
		return "application/json"
	case ".webp":
		return "image/webp"
	case ".jpg":
		return "image/jpeg"
	default:
		return "application/octet-stream"
	}
}

// heartbeat records the conversion's progress every few seconds for as long as it runs, so a
// long converter run with no output still proves the worker alive.
type heartbeat struct {
	mu   sync.Mutex
	p    contract.RenditionProgress
	done chan struct{}
	wg   sync.WaitGroup
}

func newHeartbeat(ctx context.Context) *heartbeat {
	h := &heartbeat{done: make(chan struct{})}
	if !activity.IsActivity(ctx) {
		return h
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			h.mu.Lock()
			p := h.p
			h.mu.Unlock()
			activity.RecordHeartbeat(ctx, p)
			select {
			case <-h.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heartbeat) set(phase, line string) {
	h.mu.Lock()
	h.p = contract.RenditionProgress{Phase: phase, Line: line}
	h.mu.Unlock()
}

func (h *heartbeat) stop() {
	close(h.done)
	h.wg.Wait()
}
