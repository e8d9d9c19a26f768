package activities

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/activities/activitiestest"
	"github.com/splathost/splathost/internal/objectstore"
)

// TestListFolderAfterResumesAndStops: the bucket sweep lists a bounded number of pages, stops
// without an error, and the next call resumes after the last key it saw, missing nothing and
// listing nothing twice.
func TestListFolderAfterResumesAndStops(t *testing.T) {
	b := &activitiestest.Bucket{}
	var all []string
	for i := range 2500 {
		k := fmt.Sprintf("i/I/u/O/f/%05d/scene.ply", i)
		b.Put(k)
		all = append(all, k)
	}
	bucket := objectstore.Bucket{API: b, Name: "bucket"}
	var seen []string
	next := ""
	for calls := 0; calls < 10; calls++ {
		pages, done := 0, true
		err := bucket.ListFolderAfter(context.Background(), "i/", next, func(page []s3types.Object) error {
			if pages == 1 {
				done = false
				return objectstore.ErrStopListing
			}
			pages++
			for _, o := range page {
				seen = append(seen, aws.ToString(o.Key))
			}
			next = aws.ToString(page[len(page)-1].Key)
			return nil
		})
		require.NoError(t, err)
		if done {
			break
		}
	}
	require.Equal(t, all, seen, "every key once, in order, over three one-page calls")
}
