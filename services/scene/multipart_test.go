package scene

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

// The part arithmetic decides what each signed URL lets the store take: the parts must add up
// to the file exactly, stay within S3's 10 000 parts, and never be smaller than S3's 5 MiB
// minimum but for the last.
func TestPartLayout(t *testing.T) {
	for _, size := range []int64{MinMultipartFileBytes, MultipartPartBytes, MultipartPartBytes + 1, 300 << 20,
		2<<30 + 7, MaxMultipartFileBytes, 200 << 30} {
		ps := partSizeFor(size)
		n := partCount(size, ps)
		require.LessOrEqual(t, n, maxParts, "size %d", size)
		require.GreaterOrEqual(t, ps, int64(MultipartPartBytes))
		require.Zero(t, ps%(1<<20), "whole MiB")
		var sum int64
		for i := 1; i <= n; i++ {
			l := partLength(size, ps, i)
			require.Positive(t, l)
			if i < n {
				require.Equal(t, ps, l)
			}
			sum += l
		}
		require.Equal(t, size, sum, "size %d", size)
	}
	require.Equal(t, 1280, partCount(MaxMultipartFileBytes, partSizeFor(MaxMultipartFileBytes)))
	require.Equal(t, 1, partCount(MinMultipartFileBytes, partSizeFor(MinMultipartFileBytes)))
}

func TestParseCompleteNamesEveryProblem(t *testing.T) {
	ok, err := parseComplete([]byte(`{"parts":[{"partNumber":2,"etag":"\"b\""},{"partNumber":1,"etag":"a"}]}`), 2)
	require.NoError(t, err)
	require.Equal(t, []completeRequest{{1, "a"}, {2, "b"}}, ok, "sorted, quotes trimmed")
	for body, want := range map[string]string{
		`{"parts":[{"partNumber":1,"etag":"a"}]}`:                                   "has 2 parts",
		`{"parts":[{"partNumber":1,"etag":"a"},{"partNumber":1,"etag":"a"}]}`:       "named twice",
		`{"parts":[{"partNumber":1,"etag":"a"},{"partNumber":3,"etag":"a"}]}`:       "from 1 to 2",
		`{"parts":[{"partNumber":1.5,"etag":"a"},{"partNumber":2,"etag":"a"}]}`:     "from 1 to 2",
		`{"parts":[{"partNumber":1,"etag":""},{"partNumber":2,"etag":"a"}]}`:        "etag",
		`{"parts":[{"partNumber":1,"etag":"a"},{"partNumber":2,"etag":"a","x":1}]}`: "x: unknown field",
		`{"parts":{}}`: "must be an array",
		`{}`:           "parts",
		`[]`:           "",
	} {
		_, err := parseComplete([]byte(body), 2)
		require.Error(t, err, body)
		e := apperr.From(err)
		require.Equal(t, 400, e.Status, body)
		require.Contains(t, strings.Join(e.Issues, "; ")+" "+e.Message, want, body)
	}
}
