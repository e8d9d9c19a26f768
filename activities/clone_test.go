package activities

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/splathost/splathost/activities/activitiestest"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/schema"
	"github.com/splathost/splathost/internal/objectkeys"
	"github.com/splathost/splathost/workflows/contract"
)

const (
	cloneInt   = "111111111111111111111111"
	cloneOwner = "222222222222222222222222"
	cloneJob   = "333333333333333333333333"
)

func TestCloneKey(t *testing.T) {
	dst := objectkeys.CloneFolder(cloneInt, cloneOwner, cloneJob)
	tests := []struct {
		src, want string
	}{
		{"i/" + cloneInt + "/u/o/splat-file/t1/scene.ply", dst + "splat-file/t1/scene.ply"},
		{"i/" + cloneInt + "/u/o/lod-folder/t2/", dst + "lod-folder/t2/"},
		{"i/" + cloneInt + "/u/o/lod-folder/t2/a/b/c.webp", dst + "lod-folder/t2/a/b/c.webp"},
		// A clone's keys map like their source's: clones of clones do not grow.
		{"i/" + cloneInt + "/u/o/clone/j1/splat-images/t3/thumbnail.jpg", dst + "splat-images/t3/thumbnail.jpg"},
		{"i/other/u/o/splat-file/t1/scene.ply", ""},
		{"i/" + cloneInt + "/x/o/splat-file/t1/scene.ply", ""},
		{"i/" + cloneInt + "/u/o/splat-file/t1/../scene.ply", ""},
		{"i/" + cloneInt + "/u/o/splat-file//scene.ply", ""},
		{"i/" + cloneInt + "/u/o/clone/j1/x", ""},
		{"https://example.com/a.mp3", ""},
	}
	for _, tt := range tests {
		got, ok := cloneKey(tt.src, cloneInt, dst)
		require.Equal(t, tt.want != "", ok, tt.src)
		require.Equal(t, tt.want, got, tt.src)
	}
}

func TestCopyTitle(t *testing.T) {
	require.Equal(t, "Garden (Copy)", copyTitle("Garden"))
	long := strings.Repeat("é", 200)
	got := copyTitle(long)
	require.Equal(t, 200, len([]rune(got)))
	require.True(t, strings.HasSuffix(got, " (Copy)"))
}

func TestPlanCloneRewritesEveryURL(t *testing.T) {
	a := &Activities{AssetBase: "http://s3/bucket"}
	src := "i/" + cloneInt + "/u/o/"
	lod := src + "lod-folder/t1"
	depth := "http://s3/bucket/" + src + "splat-images/t2/depth.jpg"
	sc := &ent.Scene{ID: "source", IntegrationID: cloneInt, OwnerID: "o", Title: "Park", SplatType: "lod", SplatURL: "http://s3/bucket/" + lod + "/lod-meta.json",
		LodFolderKey: &lod, ImageURL: "http://s3/bucket/" + src + "splat-images/t2/thumbnail.jpg", ThumbnailDepthURL: &depth,
		AssetKeys:  []string{src + "splat-images/t2/thumbnail.jpg", src + "splat-images/t2/depth.jpg"},
		AllowEmbed: true, AllowComments: false, AllowReactions: true, AllowClone: true,
		LevelData: map[string]any{"audio": []any{"http://s3/bucket/" + src + "audio/t3/wind.mp3", "https://cdn.example/x.mp3"},
			"camera": map[string]any{"fov": 60.0}, "tile": "http://s3/bucket/" + lod + "/0/1.webp"}}
	in := contract.PrepareCloneInput{SplatID: cloneJob, IntegrationID: cloneInt, OwnerID: cloneOwner, ClonedAt: time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)}
	dst := "http://s3/bucket/" + objectkeys.CloneFolder(cloneInt, cloneOwner, cloneJob)

	d, plan, err := a.planClone(sc, false, in)
	require.NoError(t, err)
	require.Equal(t, "Park (Copy)", d.Title)
	require.Nil(t, d.RemixedFrom)
	require.Equal(t, dst+"lod-folder/t1/lod-meta.json", d.SplatURL)
	require.Equal(t, strings.TrimPrefix(dst, "http://s3/bucket/")+"lod-folder/t1", *d.LodFolderKey)
	require.Equal(t, dst+"splat-images/t2/thumbnail.jpg", d.ImageURL)
	require.Equal(t, dst+"splat-images/t2/depth.jpg", *d.ThumbnailDepthURL)
	require.Equal(t, []any{dst + "audio/t3/wind.mp3", "https://cdn.example/x.mp3"}, d.LevelData["audio"])
	require.Equal(t, dst+"lod-folder/t1/0/1.webp", d.LevelData["tile"], "a URL into the folder points into the copied folder")
	require.Equal(t, map[string]any{"fov": 60.0}, d.LevelData["camera"])
	require.Equal(t, "http://s3/bucket/"+src+"audio/t3/wind.mp3", sc.LevelData["audio"].([]any)[0], "the source is not modified")
	require.Len(t, plan.Objects, 3, "two images and the audio; the folder is copied by listing")
	require.Len(t, d.AssetKeys, 3)
	require.Equal(t, lod+"/", plan.FolderSrc)
	require.True(t, d.AllowEmbed && !d.AllowComments && d.AllowReactions)

	d, _, err = a.planClone(sc, true, in)
	require.NoError(t, err)
	require.Equal(t, "Park", d.Title, "a remix keeps the title")
	require.Equal(t, &schema.RemixedFrom{SplatID: "source", OwnerName: "", ClonedAt: "2026-11-02T03:04:05.000Z"}, d.RemixedFrom)

	// levelData naming another customer's file (same integration) or another integration's is
	// kept as text and never copied: only the source owner's own objects are.
	foreign := "http://s3/bucket/i/" + cloneInt + "/u/someone-else/splat-file/t9/secret.ply"
	other := "http://s3/bucket/i/another-integration/u/o/splat-file/t9/x.ply"
	sc.LevelData = map[string]any{"audio": []any{foreign, other, "http://s3/bucket/" + src + "audio/t3/wind.mp3"}}
	d, plan, err = a.planClone(sc, false, in)
	require.NoError(t, err)
	require.Equal(t, []any{foreign, other, dst + "audio/t3/wind.mp3"}, d.LevelData["audio"])
	for _, o := range plan.Objects {
		require.True(t, strings.HasPrefix(o.Src, src), "only the owner's objects are copied: %s", o.Src)
	}
	require.Len(t, plan.Objects, 3)

	sc.AssetKeys = append(sc.AssetKeys, "i/another-integration/u/o/splat-file/t/x.ply")
	_, _, err = a.planClone(sc, false, in)
	require.Error(t, err, "a key outside the integration is never copied")
}

// folderPlan is a plan of n objects in a LOD folder plus one single object.
func folderPlan(b *activitiestest.Bucket, n int) (contract.CopyCloneInput, []string) {
	srcFolder := "i/" + cloneInt + "/u/o/lod-folder/t/"
	prefix := objectkeys.CloneFolder(cloneInt, cloneOwner, cloneJob)
	want := []string{prefix + "splat-images/t2/thumbnail.jpg"}
	// A committed scene's objects are its sealed copies (objectkeys.Sealed): what clones copy.
	b.PutSized(objectkeys.Sealed("i/"+cloneInt+"/u/o/splat-images/t2/thumbnail.jpg"), 7)
	for i := range n {
		k := fmt.Sprintf("%s%04d.webp", srcFolder, i)
		b.PutSized(objectkeys.Sealed(k), int64(i))
		want = append(want, prefix+"lod-folder/t/"+k[len(srcFolder):])
	}
	return contract.CopyCloneInput{SplatID: cloneJob, Prefix: prefix, TotalObjects: n + 1, Concurrency: 4, Plan: contract.ClonePlan{
		Objects:   []contract.ObjectCopy{{Src: "i/" + cloneInt + "/u/o/splat-images/t2/thumbnail.jpg", Dst: want[0], Size: 7}},
		FolderSrc: srcFolder, FolderDst: prefix + "lod-folder/t/"}}, want
}

// TestCopyCloneObjectsResumesWithoutRecopying crashes a copy after 1 200 of 2 501 objects, then
// runs the retry with the last heartbeat: every object ends up copied exactly once.
func TestCopyCloneObjectsResumesWithoutRecopying(t *testing.T) {
	b := &activitiestest.Bucket{}
	in, want := folderPlan(b, 2500)
	crash := errors.New("worker crashed")
	b.FailCopy = func(call int, _ string) error {
		if call > 1200 {
			return crash
		}
		return nil
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &Activities{Objects: b, Bucket: "bucket"}
	env.RegisterActivity(a)
	var last contract.CloneProgress
	// Every heartbeat of both attempts, in order: what polls would have seen.
	var mu sync.Mutex
	var seen []int
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, d.Get(&last))
		seen = append(seen, last.Copied)
	})
	_, err := env.ExecuteActivity(a.CopyCloneObjects, in)
	require.ErrorContains(t, err, "worker crashed")
	require.Len(t, b.Copies(), 1200)
	require.Equal(t, 2501, last.Total)
	require.LessOrEqual(t, last.Copied, 1200)

	b.FailCopy = nil
	env = s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	// The server keeps an earlier heartbeat than the last one recorded (the SDK throttles):
	// the retry starts from what is in the folder, which is more.
	reached := contract.CloneProgress{Copied: last.Copied / 2, Total: last.Total}
	env.SetHeartbeatDetails(reached)
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		var p contract.CloneProgress
		require.NoError(t, d.Get(&p))
		seen = append(seen, p.Copied)
	})
	crashedAt := len(seen)
	v, err := env.ExecuteActivity(a.CopyCloneObjects, in)
	require.NoError(t, err)
	require.Greater(t, len(seen), crashedAt, "the retry heartbeats")
	require.GreaterOrEqual(t, seen[crashedAt], reached.Copied, "the retry starts from what polls saw, not from 0")
	require.GreaterOrEqual(t, seen[crashedAt], 1000, "or from what its first listed page holds, when that is more")
	// The SDK sends the first heartbeat of an attempt at once and throttles the rest: that first
	// one is what a poll sees right after the retry starts (it was 0 before, issue 12 point 13).
	require.True(t, slices.IsSorted(seen[crashedAt:]), "progress never goes back within the retry")
	var res contract.CopyCloneResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, contract.CopyCloneResult{Copied: 1301, Skipped: 1200}, res)
	copies := b.Copies()
	require.Len(t, copies, 2501, "each object copied once in all")
	once := map[string]bool{}
	for _, k := range copies {
		require.False(t, once[k], "copied twice: %s", k)
		once[k] = true
	}
	require.ElementsMatch(t, want, b.Keys(in.Prefix))
}

// runCopy runs one CopyCloneObjects attempt against b.
func runCopy(b *activitiestest.Bucket, in contract.CopyCloneInput) error {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &Activities{Objects: b, Bucket: "bucket"}
	env.RegisterActivity(a)
	_, err := env.ExecuteActivity(a.CopyCloneObjects, in)
	return err
}

// TestCopyCloneObjectsSourceMissing: a source object that vanished fails the job with 409
// SOURCE_FILES_MISSING, not with a retry.
func TestCopyCloneObjectsSourceMissing(t *testing.T) {
	b := &activitiestest.Bucket{}
	in, _ := folderPlan(b, 3)
	in.Plan.Objects[0].Src = "i/" + cloneInt + "/u/o/splat-images/t2/gone.jpg"
	err := runCopy(b, in)
	e := contract.ClientErrorOf(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, 409, e.Status)
	require.Equal(t, "SOURCE_FILES_MISSING", e.Extra["code"])
}

// TestCopyCloneObjectsLeavesNoCopyInFlight: when one copy fails, the copies already sent are
// waited for, not cancelled: the store would finish a cancelled CopyObject anyway, after the
// attempt returned and the rollback emptied the job's folder (a leftover CI once saw). So
// nothing lands in the folder once the attempt has returned.
func TestCopyCloneObjectsLeavesNoCopyInFlight(t *testing.T) {
	b := &activitiestest.Bucket{CopyLatency: 150 * time.Millisecond}
	in, _ := folderPlan(b, 20)
	b.FailCopy = func(call int, _ string) error {
		if call == 3 {
			time.Sleep(20 * time.Millisecond) // the other copies are on their way
			return errors.New("the store refused one copy")
		}
		return nil
	}
	err := runCopy(b, in)
	require.ErrorContains(t, err, "refused one copy")
	atReturn := b.Keys(in.Prefix)
	require.NotEmpty(t, atReturn, "the copies in flight when the copy failed were waited for")
	time.Sleep(3 * b.CopyLatency)
	require.Equal(t, atReturn, b.Keys(in.Prefix), "no copy lands after the attempt returned")
}

// TestCopyCloneObjectsChecksTheRecordedFolder: a plan made from the file count recorded at
// commit (no listing of its own) relies on the copy's listing, which fails the job with 409
// SOURCE_FILES_MISSING when the folder holds fewer files or bytes than recorded, and copies the
// whole folder when it holds them all.
func TestCopyCloneObjectsChecksTheRecordedFolder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		files       int
		bytes       int64
		wantMissing bool
	}{
		{"whole", 20, 190, false},
		{"a file gone", 21, 190, true},
		{"bytes gone", 20, 191, true},
		// A tile rewritten bigger than committed: copying it would hold bytes nobody is
		// charged for.
		{"a tile grew", 20, 189, true},
		{"a file more", 19, 190, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &activitiestest.Bucket{}
			in, want := folderPlan(b, 20) // tiles of 0..19 bytes: 190 in all
			in.Plan.FolderFiles, in.Plan.FolderBytes = tc.files, tc.bytes
			err := runCopy(b, in)
			if !tc.wantMissing {
				require.NoError(t, err)
				require.ElementsMatch(t, want, b.Keys(in.Prefix))
				return
			}
			e := contract.ClientErrorOf(err)
			require.NotNil(t, e, "%v", err)
			require.Equal(t, 409, e.Status)
			require.Equal(t, "SOURCE_FILES_MISSING", e.Extra["code"])
		})
	}
}

func TestCopyCloneObjectsRefusesForeignDestinations(t *testing.T) {
	b := &activitiestest.Bucket{}
	in, _ := folderPlan(b, 1)
	in.Plan.Objects[0].Dst = "i/" + cloneInt + "/u/someone-else/x"
	err := runCopy(b, in)
	require.ErrorContains(t, err, "outside the job's folder")
	require.Empty(t, b.Copies())
}

// TestCopyCloneObjectsRefusesASingleObjectThatChangedSize: the thumbnail was measured (and
// reserved) at 7 bytes, then rewritten at 9 before the copy: the copy is refused with 409
// SOURCE_FILES_MISSING (the job rolls back) rather than held at a size nobody is charged for.
func TestCopyCloneObjectsRefusesASingleObjectThatChangedSize(t *testing.T) {
	b := &activitiestest.Bucket{}
	in, _ := folderPlan(b, 3)
	b.PutSized(objectkeys.Sealed(in.Plan.Objects[0].Src), 9)
	e := contract.ClientErrorOf(runCopy(b, in))
	require.NotNil(t, e)
	require.Equal(t, 409, e.Status)
	require.Equal(t, "SOURCE_FILES_MISSING", e.Extra["code"])
	require.Contains(t, e.Message, "9 bytes, 7 were reserved")
}

// TestAssetRefReadsEveryURLForm: levelData may name an asset by its stored URL or by the asset
// route's URL an answer handed out (signed or not); each maps to its key and renders another key
// in the same form, a signed one as the stable unsigned URL. Anything else is not an asset.
func TestAssetRefReadsEveryURLForm(t *testing.T) {
	a := &Activities{AssetBase: "http://s3/bucket", PublicBase: "https://gw.example"}
	key := "i/int/u/own/f/tick/a.ply"
	for _, c := range []struct{ in, render string }{
		{"http://s3/bucket/" + key, "http://s3/bucket/NEW"},
		{"https://gw.example/assets/" + key, "https://gw.example/assets/NEW"},
		{"https://gw.example/assets/s/tok.sig/" + key, "https://gw.example/assets/NEW"},
	} {
		got, render, ok := a.assetRef(c.in)
		require.True(t, ok, c.in)
		require.Equal(t, key, got, c.in)
		require.Equal(t, c.render, render("NEW"), c.in)
	}
	for _, in := range []string{"https://elsewhere/" + key, "https://gw.example/assets/s/only-a-token", "https://gw.example/other/" + key, ""} {
		_, _, ok := a.assetRef(in)
		require.False(t, ok, in)
	}
}

// TestPlanCloneCopiesLevelDataAudioInEveryURLForm: levelData.audio.url may hold the stored URL
// (what saves write), the public asset-route URL or a signed one (what answers hand out); in
// each form the clone copies the audio into its own folder, adds the copy to its asset keys
// (so its delete purges it) and points the URL at the copy, in the same form (a signed URL as
// the stable one). An audio file already among the scene's asset keys (a save charged it) is
// copied once.
func TestPlanCloneCopiesLevelDataAudioInEveryURLForm(t *testing.T) {
	a := &Activities{AssetBase: "http://s3/bucket", PublicBase: "https://gw.example"}
	src := "i/" + cloneInt + "/u/o/"
	audioKey := src + "a/t4/audio.mp3"
	in := contract.PrepareCloneInput{SplatID: cloneJob, IntegrationID: cloneInt, OwnerID: cloneOwner}
	dst := objectkeys.CloneFolder(cloneInt, cloneOwner, cloneJob)
	for _, c := range []struct{ form, url, want string }{
		{"stored", "http://s3/bucket/" + audioKey, "http://s3/bucket/" + dst + "a/t4/audio.mp3"},
		{"asset route", "https://gw.example/assets/" + audioKey, "https://gw.example/assets/" + dst + "a/t4/audio.mp3"},
		{"signed asset route", "https://gw.example/assets/s/tok.sig/" + audioKey, "https://gw.example/assets/" + dst + "a/t4/audio.mp3"},
	} {
		for _, charged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s charged=%v", c.form, charged), func(t *testing.T) {
				sc := &ent.Scene{ID: "source", IntegrationID: cloneInt, OwnerID: "o", Title: "Song", SplatType: "file",
					SplatURL: "http://s3/bucket/" + src + "f/t1/scene.splat", AssetKeys: []string{src + "f/t1/scene.splat"},
					LevelData: map[string]any{"version": 1.0, "audio": map[string]any{"url": c.url, "loop": true, "volume": 0.25}}}
				if charged {
					sc.AssetKeys = append(sc.AssetKeys, audioKey)
				}
				d, plan, err := a.planClone(sc, false, in)
				require.NoError(t, err)
				require.Equal(t, map[string]any{"url": c.want, "loop": true, "volume": 0.25}, d.LevelData["audio"])
				require.Equal(t, 1.0, d.LevelData["version"])
				require.Contains(t, d.AssetKeys, dst+"a/t4/audio.mp3")
				require.Len(t, d.AssetKeys, 2, "the file and the audio, once each")
				require.Len(t, plan.Objects, 2)
				require.Contains(t, plan.Objects, contract.ObjectCopy{Src: audioKey, Dst: dst + "a/t4/audio.mp3"})
				require.Equal(t, c.url, sc.LevelData["audio"].(map[string]any)["url"], "the source is not modified")
			})
		}
	}
}
