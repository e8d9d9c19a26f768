package activities

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/splathost/splathost/activities/activitiestest"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

const owner = "i/aaaaaaaaaaaaaaaaaaaaaaaa/u/bbbbbbbbbbbbbbbbbbbbbbbb/"

func keysUnder(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d.webp", prefix, i)
	}
	return out
}

func newEnv(t *testing.T, b *activitiestest.Bucket) (*testsuite.TestActivityEnvironment, *Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestActivityEnvironment()
	a := &Activities{Objects: b, Bucket: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env.RegisterActivity(a)
	return env, a
}

func TestDeleteObjectsKeysAndPrefixesInBatches(t *testing.T) {
	b := &activitiestest.Bucket{}
	keys := keysUnder(owner+"splat_file/t1/", 2500)
	folder := owner + "lod_folder/t2/"
	tiles := keysUnder(folder, 1500)
	other := owner + "lod_folder/t20/keep.webp" // shares the folder name's start, not the folder
	b.Put(keys...)
	b.Put(tiles...)
	b.Put(other)
	env, a := newEnv(t, b)
	v, err := env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keys, Prefixes: []string{folder}})
	require.NoError(t, err)
	var res contract.DeleteObjectsResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, 4000, res.Deleted)
	require.Equal(t, 1, b.Len())
	require.True(t, b.Has(other))
	for _, call := range b.Deletes() {
		require.LessOrEqual(t, len(call), 1000, "S3 DeleteObjects takes at most 1000 keys")
	}
	require.Len(t, b.Deletes(), 3+2)
}

func TestDeleteObjectsMissingKeysAreSuccess(t *testing.T) {
	for _, report := range []bool{false, true} {
		b := &activitiestest.Bucket{ReportMissing: report}
		env, a := newEnv(t, b)
		v, err := env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keysUnder(owner+"splat_file/t/", 3),
			Prefixes: []string{owner + "lod_folder/gone/"}})
		require.NoError(t, err, "reportMissing=%v", report)
		var res contract.DeleteObjectsResult
		require.NoError(t, v.Get(&res))
		require.Equal(t, 3, res.Deleted)
	}
}

func TestDeleteObjectsResumesFromHeartbeat(t *testing.T) {
	b := &activitiestest.Bucket{}
	keys := keysUnder(owner+"splat_file/t1/", 2500)
	done := owner + "lod_folder/done/"
	todo := owner + "lod_folder/todo/"
	b.Put(keys[1000:]...) // the first batch went in the attempt that heartbeated
	b.Put(keysUnder(todo, 10)...)
	env, a := newEnv(t, b)
	env.SetHeartbeatDetails(contract.DeleteProgress{KeysDone: 1000, Deleted: 1000})
	v, err := env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keys, Prefixes: []string{done, todo}})
	require.NoError(t, err)
	var res contract.DeleteObjectsResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, 2500+10, res.Deleted)
	require.Equal(t, 0, b.Len())
	require.Equal(t, keys[1000], b.Deletes()[0][0], "the first 1000 keys are not sent again")

	// Past the keys and the first prefix: only the second prefix is listed.
	b2 := &activitiestest.Bucket{}
	b2.Put(keysUnder(todo, 10)...)
	env, a = newEnv(t, b2)
	env.SetHeartbeatDetails(contract.DeleteProgress{KeysDone: len(keys), PrefixesDone: 1, Deleted: 2600})
	v, err = env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keys, Prefixes: []string{done, todo}})
	require.NoError(t, err)
	require.NoError(t, v.Get(&res))
	require.Equal(t, 2610, res.Deleted)
	for _, p := range b2.Lists() {
		require.Equal(t, todo, p)
	}

	// Details that do not fit the input are ignored: the activity starts over.
	b3 := &activitiestest.Bucket{}
	env, a = newEnv(t, b3)
	env.SetHeartbeatDetails(contract.DeleteProgress{KeysDone: 99})
	v, err = env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keys[:2]})
	require.NoError(t, err)
	require.NoError(t, v.Get(&res))
	require.Equal(t, 2, res.Deleted)
}

func TestDeleteObjectsFailureIsRetryable(t *testing.T) {
	b := &activitiestest.Bucket{FailDelete: func(int, []string) error { return errors.New("store unavailable") }}
	env, a := newEnv(t, b)
	_, err := env.ExecuteActivity(a.DeleteObjects, contract.DeleteObjectsInput{Keys: keysUnder(owner+"splat_file/t/", 1)})
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.False(t, app.NonRetryable())
}

func TestDeleteObjectsRefusesBroadInput(t *testing.T) {
	bad := []contract.DeleteObjectsInput{
		{Prefixes: []string{""}},
		{Prefixes: []string{"i/"}},
		{Prefixes: []string{"i/aaaaaaaaaaaaaaaaaaaaaaaa/"}},
		{Prefixes: []string{"i/aaaaaaaaaaaaaaaaaaaaaaaa/u/"}},
		{Prefixes: []string{"i/aaaaaaaaaaaaaaaaaaaaaaaa/u/bbbbbbbbbbbbbbbbbbbbbbbb"}}, // no trailing slash
		{Prefixes: []string{"x/aaaaaaaaaaaaaaaaaaaaaaaa/u/bbbbbbbbbbbbbbbbbbbbbbbb/"}},
		{Prefixes: []string{"i/aaaaaaaaaaaaaaaaaaaaaaaa/../bbbbbbbbbbbbbbbbbbbbbbbb/x/"}},
		{Prefixes: []string{"i//u/b/"}},
		{Keys: []string{""}},
		{Keys: []string{"other/key"}},
		{Keys: []string{"i/a/../../etc"}},
	}
	for i, in := range bad {
		b := &activitiestest.Bucket{}
		env, a := newEnv(t, b)
		_, err := env.ExecuteActivity(a.DeleteObjects, in)
		var app *temporal.ApplicationError
		require.True(t, errors.As(err, &app), "case %d: %v", i, err)
		require.Equal(t, contract.ErrBadInput, app.Type(), "case %d", i)
		require.True(t, app.NonRetryable(), "case %d", i)
		require.Empty(t, b.Deletes(), "case %d", i)
		require.Empty(t, b.Lists(), "case %d", i)
	}
	require.True(t, objectkeys.SafePrefix(owner))
	require.True(t, objectkeys.SafePrefix(owner+"lod_folder/t/"))
}

func TestSlicePurge(t *testing.T) {
	keys, prefixes := []string{"k0", "k1", "k2"}, []string{"p0", "p1"}
	cases := []struct {
		offset, limit int
		want          contract.LoadPurgeResult
	}{
		{0, 2, contract.LoadPurgeResult{Keys: []string{"k0", "k1"}, Next: 2}},
		{2, 2, contract.LoadPurgeResult{Keys: []string{"k2"}, Prefixes: []string{"p0"}, Next: 4}},
		{4, 2, contract.LoadPurgeResult{Prefixes: []string{"p1"}, Next: 5, Last: true}},
		{0, 10, contract.LoadPurgeResult{Keys: keys, Prefixes: prefixes, Next: 5, Last: true}},
		{5, 10, contract.LoadPurgeResult{Next: 5, Last: true}},
		{9, 10, contract.LoadPurgeResult{Next: 5, Last: true}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, slicePurge(keys, prefixes, c.offset, c.limit), "offset %d limit %d", c.offset, c.limit)
	}
	require.Equal(t, contract.LoadPurgeResult{Next: 0, Last: true}, slicePurge(nil, nil, 0, 1000))
}
