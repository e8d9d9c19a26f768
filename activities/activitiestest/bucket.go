// Package activitiestest holds an in-memory bucket for the unit and workflow tests of the
// object activities: it implements objectstore.API, records every call and fails the calls
// a test asks it to, which a real store cannot be made to do on cue. Integration tests use the
// real store (versitygw).
package activitiestest

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket is an in-memory bucket. The zero value is empty and ready.
type Bucket struct {
	mu      sync.Mutex
	objects map[string]int64  // key → size
	bodies  map[string][]byte // key → content, for objects stored with one
	// FailDelete, when set, runs before every DeleteObjects call (numbered from 1) with its keys;
	// an error it returns fails the call before anything is deleted.
	FailDelete func(call int, keys []string) error
	// ReportMissing makes DeleteObjects report absent keys as NoSuchKey errors, as some stores do.
	ReportMissing bool
	// FailCopy, when set, runs before every CopyObject call (numbered from 1) with its
	// destination key; an error it returns fails the call before anything is copied.
	FailCopy func(call int, dst string) error
	// CopyLatency, when set, is how long the store takes to copy an object. A caller that gives
	// up sooner (its context ends) gets its error at once, but the copy still lands when the
	// latency is over, as an S3 server finishes a request whose client went away.
	CopyLatency time.Duration
	// copyCalls numbers the CopyObject calls as they start: concurrent copies must never share
	// a number (counting finished copies would let two calls both be "the 1200th").
	copyCalls int
	deletes   [][]string
	lists     []string
	copies    []string
	aborts    []string
}

// Put adds empty objects.
func (b *Bucket) Put(keys ...string) {
	for _, k := range keys {
		b.PutSized(k, 0)
	}
}

// PutSized adds an object of size bytes.
func (b *Bucket) PutSized(key string, size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objects == nil {
		b.objects = map[string]int64{}
	}
	b.objects[key] = size
}

// Has reports whether key is stored.
func (b *Bucket) Has(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.objects[key]
	return ok
}

// Keys returns every stored key under prefix, in order.
func (b *Bucket) Keys(prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Copies returns the destination of every successful CopyObject call so far, in call order.
func (b *Bucket) Copies() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.copies...)
}

// Len is the number of stored objects.
func (b *Bucket) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.objects)
}

// Deletes returns the keys of every DeleteObjects call so far, failed ones included.
func (b *Bucket) Deletes() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]string(nil), b.deletes...)
}

// Lists returns the prefix of every ListObjectsV2 call so far.
func (b *Bucket) Lists() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lists...)
}

// ListObjectsV2 lists keys under Prefix after StartAfter, in key order, MaxKeys (default 1000)
// at a time.
func (b *Bucket) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix, after := aws.ToString(in.Prefix), aws.ToString(in.StartAfter)
	b.lists = append(b.lists, prefix)
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	limit := int(aws.ToInt32(in.MaxKeys))
	if limit <= 0 {
		limit = 1000
	}
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(len(keys) > limit)}
	for _, k := range keys[:min(limit, len(keys))] {
		out.Contents = append(out.Contents, s3types.Object{Key: aws.String(k), Size: aws.Int64(b.objects[k])})
	}
	return out, nil
}

// DeleteObjects removes the named objects; absent ones are success (or NoSuchKey errors with
// ReportMissing).
func (b *Bucket) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	keys := make([]string, len(in.Delete.Objects))
	for i, o := range in.Delete.Objects {
		keys[i] = aws.ToString(o.Key)
	}
	b.mu.Lock()
	b.deletes = append(b.deletes, keys)
	call, fail := len(b.deletes), b.FailDelete
	b.mu.Unlock()
	if fail != nil {
		if err := fail(call, keys); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := &s3.DeleteObjectsOutput{}
	for _, k := range keys {
		if _, ok := b.objects[k]; !ok && b.ReportMissing {
			out.Errors = append(out.Errors, s3types.Error{Key: aws.String(k), Code: aws.String("NoSuchKey"), Message: aws.String("no such key")})
		}
		delete(b.objects, k)
		delete(b.bodies, k)
	}
	return out, nil
}

// HeadObject answers an object's size, or NotFound.
func (b *Bucket) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size, ok := b.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &s3types.NotFound{Message: aws.String("not found")}
	}
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(size)}, nil
}

// CopyObject copies CopySource ("bucket/key", URL-encoded as S3 requires) to Key, or fails
// with NoSuchKey when the source is absent.
func (b *Bucket) CopyObject(ctx context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	dst := aws.ToString(in.Key)
	b.mu.Lock()
	b.copyCalls++
	call, fail, latency := b.copyCalls, b.FailCopy, b.CopyLatency
	b.mu.Unlock()
	if fail != nil {
		if err := fail(call, dst); err != nil {
			return nil, err
		}
	}
	src, err := url.PathUnescape(aws.ToString(in.CopySource))
	if err != nil {
		return nil, err
	}
	_, key, _ := strings.Cut(src, "/")
	if latency <= 0 {
		return b.copy(key, dst)
	}
	// The server's side of the call runs to its end whatever the client does.
	landed := make(chan error, 1)
	go func() {
		time.Sleep(latency)
		_, err := b.copy(key, dst)
		landed <- err
	}()
	select {
	case err := <-landed:
		if err != nil {
			return nil, err
		}
		return &s3.CopyObjectOutput{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// copy stores a copy of key at dst.
func (b *Bucket) copy(key, dst string) (*s3.CopyObjectOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size, ok := b.objects[key]
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("no such key: " + key)}
	}
	b.objects[dst] = size
	b.copies = append(b.copies, dst)
	return &s3.CopyObjectOutput{}, nil
}

// PutBody adds an object with its content, for the activities that read objects.
func (b *Bucket) PutBody(key string, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objects == nil {
		b.objects = map[string]int64{}
	}
	if b.bodies == nil {
		b.bodies = map[string][]byte{}
	}
	b.objects[key] = int64(len(body))
	b.bodies[key] = body
}

// Body returns a stored object's content (zeros of its size when it was stored without one).
func (b *Bucket) Body(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	size, ok := b.objects[key]
	if !ok {
		return nil, false
	}
	if body, ok := b.bodies[key]; ok {
		return body, true
	}
	return make([]byte, size), true
}

// GetObject returns an object's content, or NoSuchKey.
func (b *Bucket) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	body, ok := b.Body(aws.ToString(in.Key))
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("no such key: " + aws.ToString(in.Key))}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

// PutObject stores an object with its content.
func (b *Bucket) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	b.PutBody(aws.ToString(in.Key), body)
	return &s3.PutObjectOutput{}, nil
}

// AbortMultipartUpload records the aborted upload id; the bucket holds no multipart state, so
// every abort succeeds, as the store's abort of an upload already gone is made to.
func (b *Bucket) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.aborts = append(b.aborts, aws.ToString(in.UploadId))
	return &s3.AbortMultipartUploadOutput{}, nil
}

// ListParts answers an aborted upload with NoSuchUpload and any other with no parts: the bucket
// holds no multipart state.
func (b *Bucket) ListParts(_ context.Context, in *s3.ListPartsInput, _ ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if slices.Contains(b.aborts, aws.ToString(in.UploadId)) {
		return nil, &s3types.NoSuchUpload{}
	}
	return &s3.ListPartsOutput{}, nil
}

// Aborts returns the upload id of every AbortMultipartUpload call so far, in call order.
func (b *Bucket) Aborts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.aborts...)
}
