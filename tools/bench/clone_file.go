package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/splathost/splathost/internal/fixtures"
	"github.com/splathost/splathost/internal/objectkeys"
)

// cloneFileBody is a valid .splat of cloneFileBytes: fixture records repeated.
func cloneFileBody() []byte {
	unit := fixtures.Splat(62_500) // 2 000 000 bytes
	return bytes.Repeat(unit, cloneFileBytes/len(unit))
}

// fileClone measures one 200 MB file's clone time against one raw CopyObject of it, the median
// of cloneFileRuns alternated runs each.
func (c *cloneBench) fileClone(ctx context.Context, row *Row) error {
	log := c.r.o.Log
	log.Info("uploading the single-file clone source", "bytes", cloneFileBytes)
	setup := time.Now()
	fileURL, err := c.t.UploadSplat(c.gw, c.eu, cloneFileBody())
	if err != nil {
		return fmt.Errorf("clone source upload: %w", err)
	}
	srcKey, ok := strings.CutPrefix(fileURL, c.cfgAB+"/")
	// The committed bytes are the sealed copy (objectkeys.Sealed), which the clone job copies.
	srcKey = objectkeys.Sealed(srcKey)
	if !ok {
		return fmt.Errorf("file URL %s is not under the asset base %s", fileURL, c.cfgAB)
	}
	srcID, err := callID(c.gw, http.MethodPost, "/api/v1/splats", c.h,
		map[string]any{"title": "Bench file clone source", "splatUrl": fileURL}, http.StatusCreated, "splatId")
	if err != nil {
		return fmt.Errorf("clone source commit: %w", err)
	}
	setupTook := time.Since(setup)

	var prod, bare []time.Duration
	statuses := map[int]int{}
	for i := range cloneFileRuns {
		job := func() error {
			run, err := c.clone(ctx, srcID, false)
			if err != nil {
				return err
			}
			if err := c.checkFileClone(ctx, run.splatID); err != nil {
				return err
			}
			prod = append(prod, run.took)
			statuses[run.status]++
			log.Info("file clone done", "run", i, "status", run.status, "took", run.took.Round(time.Millisecond))
			return nil
		}
		raw := func() error {
			t0 := time.Now()
			if err := c.copyRaw(ctx, srcKey, fmt.Sprintf("%sfile-%d.splat", c.scratch(), i)); err != nil {
				return fmt.Errorf("bare copy: %w", err)
			}
			took := time.Since(t0)
			bare = append(bare, took)
			log.Info("bare file copy done", "run", i, "took", took.Round(time.Millisecond))
			return nil
		}
		first, second := job, raw
		if i%2 != 0 {
			first, second = raw, job
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	row.Value, row.Bare = ms(median(prod)), ms(median(bare))
	row.Notes = fmt.Sprintf("%d B .splat; median of %d alternated; POST %s; clone %.0f-%.0f ms, bare CopyObject %.0f-%.0f ms; setup %.1f s",
		cloneFileBytes, cloneFileRuns, fmtCounts(statuses), ms(slices.Min(prod)), ms(slices.Max(prod)),
		ms(slices.Min(bare)), ms(slices.Max(bare)), setupTook.Seconds())
	return nil
}

// checkFileClone checks a file clone's own object holds the whole file.
func (c *cloneBench) checkFileClone(ctx context.Context, id string) error {
	sp, err := c.detail(id)
	if err != nil {
		return err
	}
	u, _ := sp["splatUrl"].(string)
	// The answer may name the file through the gateway's asset route (signed for a private
	// scene).
	key, _, ok := objectkeys.AssetRef(c.cfgAB, c.gw, u)
	if !ok {
		return fmt.Errorf("clone %s: splatUrl %q names no stored object", id, u)
	}
	head, err := c.store.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.store.Bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("clone %s: HEAD %s: %w", id, key, err)
	}
	if n := aws.ToInt64(head.ContentLength); n != cloneFileBytes {
		return fmt.Errorf("clone %s: its file holds %d bytes, want %d", id, n, cloneFileBytes)
	}
	return nil
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
