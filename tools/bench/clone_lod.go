package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/internal/objectstore"
	"github.com/splathost/splathost/internal/uploadrules"
)

// lodCloneFolder is a LOD folder of n files: a real fixture folder (its manifest and SOG cells)
// topped up with copies of its first .webp cell, so the commit's sniffs pass.
func lodCloneFolder(n int) (map[string][]byte, []string) {
	folder := fixtures.LODFolder(100)
	var cell []byte
	for _, p := range fixtures.LODPaths(folder) {
		if strings.HasSuffix(p, ".webp") {
			cell = folder[p]
			break
		}
	}
	for i := 0; len(folder) < n; i++ {
		folder[fmt.Sprintf("extra/%05d.webp", i)] = cell
	}
	return folder, fixtures.LODPaths(folder)
}

// putSigned PUTs body to a signed upload URL with the signed headers.
func putSigned(ctx context.Context, uploadURL, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Cache-Control", uploadrules.CacheControl)
	resp, err := benchClient.Do(req)
	if err != nil {
		return fmt.Errorf("signed upload: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("signed upload: status %d", resp.StatusCode)
	}
	return nil
}

// lodSource uploads and commits the LOD folder and returns the scene id, its folder (a prefix)
// and the folder's keys.
func (c *cloneBench) lodSource(ctx context.Context) (id, prefix string, keys []string, err error) {
	up, err := c.uploadLOD(ctx, cloneLODObjects)
	if err != nil {
		return "", "", nil, err
	}
	id, err = callID(c.gw, http.MethodPost, "/api/v1/splats", c.h, up.commitBody("Bench LOD clone source"), http.StatusCreated, "splatId")
	if err != nil {
		return "", "", nil, fmt.Errorf("lod commit: %w", err)
	}
	folderKey := up.folderKey
	// The scene's objects are the sealed copy of its upload folder (objectkeys.Sealed): what
	// the clone job copies, so the bare copies copy it too.
	sealed := objectkeys.Sealed(folderKey + "/")
	keys, err = c.list(ctx, sealed)
	if err != nil {
		return "", "", nil, err
	}
	if len(keys) != cloneLODObjects {
		return "", "", nil, fmt.Errorf("the source folder holds %d objects, want %d", len(keys), cloneLODObjects)
	}
	return id, sealed, keys, nil
}

// lodUpload is a LOD folder uploaded and not committed yet.
type lodUpload struct {
	folderKey, manifestURL string
	// keys are the upload keys of its files.
	keys []string
}

// commitBody is the commit of the folder as a scene titled title.
func (u lodUpload) commitBody(title string) map[string]any {
	return map[string]any{"title": title, "splatType": "lod", "splatUrl": u.manifestURL, "lodFolderKey": u.folderKey}
}

// uploadLOD asks for a LOD folder of n files (lodCloneFolder) and PUTs every file.
func (c *cloneBench) uploadLOD(ctx context.Context, n int) (lodUpload, error) {
	folder, paths := lodCloneFolder(n)
	files := make([]map[string]any, len(paths))
	for i, p := range paths {
		files[i] = map[string]any{"relativePath": p, "contentType": fixtures.LODContentType(p), "fileSize": len(folder[p])}
	}
	up, err := call(c.gw, http.MethodPost, "/api/v1/uploads/lod-folder", c.h, map[string]any{"files": files}, http.StatusOK)
	if err != nil {
		return lodUpload{}, err
	}
	out := lodUpload{}
	out.folderKey, _ = up["folderKey"].(string)
	out.manifestURL, _ = up["manifestUrl"].(string)
	uploads, _ := up["uploads"].([]any)
	if out.folderKey == "" || out.manifestURL == "" || len(uploads) != len(paths) {
		return lodUpload{}, fmt.Errorf("lod-folder: %d signed uploads for %d files, folderKey %q", len(uploads), len(paths), out.folderKey)
	}
	urls := make([]string, len(uploads))
	rel := make([]string, len(uploads))
	for i, u := range uploads {
		m, _ := u.(map[string]any)
		rel[i], _ = m["relativePath"].(string)
		urls[i], _ = m["uploadUrl"].(string)
		key, _ := m["key"].(string)
		if _, ok := folder[rel[i]]; !ok || urls[i] == "" || key == "" {
			return lodUpload{}, fmt.Errorf("lod-folder: bad upload %v", m)
		}
		out.keys = append(out.keys, key)
	}
	if err := forEach(len(uploads), uploadWorkers, func(i int) error {
		return putSigned(ctx, urls[i], fixtures.LODContentType(rel[i]), folder[rel[i]])
	}); err != nil {
		return lodUpload{}, fmt.Errorf("lod uploads: %w", err)
	}
	return out, nil
}

// list returns every key under prefix.
func (c *cloneBench) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	b := objectstore.Bucket{API: c.store.Client, Name: c.store.Bucket}
	err := b.ListFolder(ctx, prefix, func(page []s3types.Object) error {
		for _, o := range page {
			keys = append(keys, aws.ToString(o.Key))
		}
		return nil
	})
	return keys, err
}

// copyRaw is one plain CopyObject inside the bucket, as the clone job does it.
func (c *cloneBench) copyRaw(ctx context.Context, src, dst string) error {
	_, err := c.store.Client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(c.store.Bucket), Key: aws.String(dst),
		CopySource: aws.String(objectkeys.CopySource(c.store.Bucket, src)), MetadataDirective: s3types.MetadataDirectiveCopy})
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return nil
}

// lodClone measures the LOD folder's clone rate against the bare copy rate, one untimed warm-up
// pair then cloneLODRuns alternated pairs; each clone must hold the whole folder.
func (c *cloneBench) lodClone(ctx context.Context, row *Row) error {
	log := c.r.o.Log
	log.Info("uploading the LOD clone source", "files", cloneLODObjects, "workers", uploadWorkers)
	setup := time.Now()
	srcID, srcPrefix, keys, err := c.lodSource(ctx)
	if err != nil {
		return fmt.Errorf("clone source setup: %w", err)
	}
	setupTook := time.Since(setup)
	log.Info("LOD clone source committed", "took", setupTook.Round(time.Millisecond))

	var prod, bare []float64
	var totals []int
	polls := 0
	for i := -1; i < cloneLODRuns; i++ { // run -1 warms both up
		job := func() error {
			run, err := c.clone(ctx, srcID, true)
			if err != nil {
				return err
			}
			if run.status != http.StatusAccepted {
				return fmt.Errorf("clone with Prefer: respond-async answered %d, want 202", run.status)
			}
			sp, err := c.detail(run.splatID)
			if err != nil {
				return err
			}
			folder, _ := sp["lodFolderKey"].(string)
			if folder == "" {
				return fmt.Errorf("clone %s has no lodFolderKey", run.splatID)
			}
			got, err := c.list(ctx, folder+"/")
			if err != nil {
				return err
			}
			if len(got) != cloneLODObjects {
				return fmt.Errorf("clone %s: its folder holds %d objects, want %d", run.splatID, len(got), cloneLODObjects)
			}
			if i >= 0 {
				prod = append(prod, float64(cloneLODObjects)/run.took.Seconds())
				totals, polls = append(totals, run.total), polls+run.polls
			}
			log.Info("LOD clone done", "run", i, "took", run.took.Round(time.Millisecond), "polls", run.polls, "totalObjects", run.total)
			return nil
		}
		raw := func() error {
			dst := fmt.Sprintf("%slod-%d/", c.scratch(), i+1)
			t0 := time.Now()
			err := forEach(len(keys), c.conc, func(j int) error {
				return c.copyRaw(ctx, keys[j], dst+strings.TrimPrefix(keys[j], srcPrefix))
			})
			took := time.Since(t0)
			if err != nil {
				return fmt.Errorf("bare copy: %w", err)
			}
			if i >= 0 {
				bare = append(bare, float64(len(keys))/took.Seconds())
			}
			log.Info("bare LOD copy done", "run", i, "took", took.Round(time.Millisecond))
			return nil
		}
		first, second := job, raw
		if i%2 != 0 { // alternate which goes first
			first, second = raw, job
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	for _, n := range totals {
		if n != 0 && n != cloneLODObjects {
			return fmt.Errorf("the clone job reported totalObjects %d, want %d", n, cloneLODObjects)
		}
	}
	row.Value, row.Bare = medianF(prod), medianF(bare)
	// Each round's own ratio too: its two sides ran back to back, so the machine's load drifts
	// less between them than across rounds.
	ratios := make([]float64, len(prod))
	for i := range prod {
		ratios[i] = prod[i] / bare[i]
	}
	row.Notes = fmt.Sprintf("%d objects, concurrency %d; median of %d after a warm-up; clone %.0f-%.0f obj/s (%d polls), bare CopyObject pool %.0f-%.0f obj/s; ratio per round %.2f-%.2f, median %.2f; each clone's folder listed: %d objects; setup %.1f s",
		cloneLODObjects, c.conc, cloneLODRuns, slices.Min(prod), slices.Max(prod), polls, slices.Min(bare), slices.Max(bare),
		slices.Min(ratios), slices.Max(ratios), medianF(ratios), cloneLODObjects, setupTook.Seconds())
	return nil
}
