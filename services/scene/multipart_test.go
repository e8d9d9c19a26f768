package scene

import (
	"fmt"
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

// checkParts is the complete's check against the store's listing: a part missing, of another
// length or with another etag is named; a whole upload gives the store's part list in order.
func TestCheckParts(t *testing.T) {
	const size, ps = 2*MultipartPartBytes + 10, MultipartPartBytes
	want := []completeRequest{{1, "a"}, {2, "b"}, {3, "c"}}
	whole := map[int]storedPart{1: {PartNumber: 1, Etag: "a", Size: ps}, 2: {PartNumber: 2, Etag: "b", Size: ps},
		3: {PartNumber: 3, Etag: "c", Size: 10}}
	parts, issues := checkParts(want, whole, size, ps)
	require.Empty(t, issues)
	require.Len(t, parts, 3)
	require.Equal(t, int32(3), *parts[2].PartNumber)
	require.Equal(t, `"c"`, *parts[2].ETag)

	broken := map[int]storedPart{1: {PartNumber: 1, Etag: "a", Size: ps - 1}, 3: {PartNumber: 3, Etag: "x", Size: 10}}
	_, issues = checkParts(want, broken, size, ps)
	require.Equal(t, []string{
		fmt.Sprintf("parts: part 1 has %d bytes, expected %d", ps-1, ps),
		"parts: part 2 was not uploaded",
		"parts: part 3 has another etag than the one stored",
	}, issues)
}
