// Package activitiestest holds an in-memory bucket for the unit and workflow tests of the
// object activities: it implements activities.ObjectAPI, records every call and fails the calls
// a test asks it to, which a real store cannot be made to do on cue. Integration tests use the
// real store (versitygw).
package activitiestest

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket is an in-memory bucket. The zero value is empty and ready.
type Bucket struct {
	mu      sync.Mutex
	objects map[string]bool
	// FailDelete, when set, runs before every DeleteObjects call (numbered from 1) with its keys;
	// an error it returns fails the call before anything is deleted.
	FailDelete func(call int, keys []string) error
	// ReportMissing makes DeleteObjects report absent keys as NoSuchKey errors, as some stores do.
	ReportMissing bool
	deletes       [][]string
	lists         []string
}

// Put adds objects.
func (b *Bucket) Put(keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.objects == nil {
		b.objects = map[string]bool{}
	}
	for _, k := range keys {
		b.objects[k] = true
	}
}

// Has reports whether key is stored.
func (b *Bucket) Has(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.objects[key]
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
		out.Contents = append(out.Contents, s3types.Object{Key: aws.String(k)})
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
		if !b.objects[k] && b.ReportMissing {
			out.Errors = append(out.Errors, s3types.Error{Key: aws.String(k), Code: aws.String("NoSuchKey"), Message: aws.String("no such key")})
		}
		delete(b.objects, k)
	}
	return out, nil
}
