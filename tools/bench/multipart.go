package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/splathost/splathost/internal/testenv"
	splathost "github.com/splathost/splathost/sdk/go"
)

// Shape of the multipart upload measure (contract item 14): one file sent in one signed PUT,
// then in the service's parts through the Go SDK, alternately, multipartRuns times each.
const (
	multipartFileBytes   = 256 << 20
	multipartRuns        = 3
	multipartParallelism = 4
)

// multipartRows are the multipart measure's rows.
type multipartRows struct{ single, parts Row }

func newMultipartRows() *multipartRows {
	what := fmt.Sprintf("%d MiB file", multipartFileBytes>>20)
	return &multipartRows{
		single: Row{Name: "upload of a " + what + " in one signed PUT, allinone", Unit: "MiB/s"},
		// Bare is the single PUT: the ratio column is multipart throughput over one PUT's.
		parts: Row{Name: fmt.Sprintf("upload of a %s in 16 MiB parts, %d in parallel (start, parts, complete), allinone", what, multipartParallelism),
			Unit: "MiB/s"},
	}
}

func (mr *multipartRows) all() []*Row { return []*Row{&mr.single, &mr.parts} }

// multipartPhase starts an all-in-one stack and runs the multipart measure on it alone.
func (r *runner) multipartPhase(ctx context.Context, ready *Row, mr *multipartRows) {
	if !r.phase(ctx, "allinone", ready, func(st *testenv.Stack) {
		r.withTenant(st, "multipart", func(t Tenant) { r.multipart(ctx, st, t, mr) }, mr.all()...)
	}) {
		failRows(ready.Err, mr.all()...)
	}
}

// multipart measures the wall time of uploading one file in one PUT (signed-URL request and
// PUT) and in parts (start, parallel part PUTs, complete) against the same store, taking the
// median of each. Neither commits: the commit is the same for both.
func (r *runner) multipart(ctx context.Context, st *testenv.Stack, t Tenant, mr *multipartRows) {
	fail := func(err error) {
		failRows(err, mr.all()...)
	}
	c, err := splathost.New(st.State.GatewayURL, splathost.WithKeys(t.PublicKey, t.SecretKey))
	if err != nil {
		fail(err)
		return
	}
	path := filepath.Join(r.dir, "multipart-bench.splat")
	f, err := os.Create(path)
	if err == nil {
		// Content does not matter to the store; a .splat is any multiple of 32 bytes.
		_, err = io.CopyN(f, &patternReader{}, multipartFileBytes)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fail(fmt.Errorf("write the file: %w", err))
		return
	}
	defer os.Remove(path)
	eu := t.ExternalUserID
	single := func() error {
		up, err := c.RequestFileUpload(ctx, eu, splathost.FileUploadRequest{FileName: "bench.splat", ContentType: "application/splat",
			FileSize: multipartFileBytes})
		if err != nil {
			return err
		}
		return c.PutObject(ctx, up.UploadURL, "application/splat", multipartFileBytes, func() (io.ReadCloser, error) { return os.Open(path) })
	}
	// completes collects, per multipart run, the time from the last byte sent to the answer of
	// the complete: the store joining the parts.
	var completes []time.Duration
	parts := func() error {
		var sentAll time.Time
		_, err := c.UploadParts(ctx, eu, path, splathost.UploadOptions{Concurrency: multipartParallelism,
			OnProgress: func(p splathost.Progress) {
				if p.BytesDone == p.BytesTotal && sentAll.IsZero() {
					sentAll = time.Now()
				}
			}})
		completes = append(completes, time.Since(sentAll))
		return err
	}
	var one, many []time.Duration
	for i := -1; i < multipartRuns; i++ { // run -1 warms both up
		for _, m := range []struct {
			run  func() error
			into *[]time.Duration
		}{{single, &one}, {parts, &many}} {
			start := time.Now()
			if err := m.run(); err != nil {
				fail(err)
				return
			}
			if i >= 0 {
				*m.into = append(*m.into, time.Since(start))
			}
		}
	}
	mib := float64(multipartFileBytes) / (1 << 20)
	mr.single.Value = mib / median(one).Seconds()
	mr.parts.Value, mr.parts.Bare = mib/median(many).Seconds(), mr.single.Value
	mr.single.Notes = fmt.Sprintf("median of %d: %.0f ms", multipartRuns, ms(median(one)))
	mr.parts.Notes = fmt.Sprintf("median of %d: %.0f ms, of which the complete (the store joining the parts) %.0f ms; bare = the one PUT",
		multipartRuns, ms(median(many)), ms(median(completes[1:])))
	r.o.Log.Info("multipart measured", "singleMiBs", mr.single.Value, "partsMiBs", mr.parts.Value)
}

// patternReader yields a repeating byte pattern without allocating a whole file in memory.
type patternReader struct{ n byte }

// Read implements io.Reader.
func (p *patternReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p.n
		p.n++
	}
	return len(b), nil
}
