package customers

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/quota"
)

var (
	t0  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now = t0.Add(100 * 24 * time.Hour)
)

func n(v int64) *int64     { return &v }
func str(v string) *string { return &v }

// hoursAgo is a time h hours before now.
func hoursAgo(h int) *time.Time { v := now.Add(-time.Duration(h) * time.Hour); return &v }

// liveScene and archivedScene build the plan's inputs; every scene here holds a slot unless
// named otherwise.
func liveScene(id string, bytes int64, updatedHoursAgo int) Scene {
	return Scene{ID: id, Bytes: bytes, Slot: true, UpdatedAt: *hoursAgo(updatedHoursAgo)}
}

func archivedScene(id string, bytes int64, archivedHoursAgo int, protected bool) Scene {
	return Scene{ID: id, Bytes: bytes, Slot: true, ArchivedAt: hoursAgo(archivedHoursAgo), Protected: protected,
		UpdatedAt: *hoursAgo(1000)}
}

// acctFn is an account callback that counts its calls (the store locks the account there).
func acctFn(m quota.Meter, calls *int) func() (quota.Meter, error) {
	return func() (quota.Meter, error) { *calls++; return m, nil }
}

// customerOf is the customer meter whose counters are the live scenes', with the given caps.
func customerOf(scenes []Scene, limit int64, max *int64) quota.Meter {
	m := quota.Meter{LimitBytes: limit, MaxSplats: max}
	for _, sc := range scenes {
		if sc.ArchivedAt == nil {
			m = m.Add(sc.charge())
		}
	}
	return m
}

// TestPlanWithoutRetentionFieldsTouchesNothing: identity fields alone plan nothing and never
// lock the account.
func TestPlanWithoutRetentionFieldsTouchesNothing(t *testing.T) {
	scenes := []Scene{liveScene("a", 500, 1)}
	calls := 0
	plan, err := PlanLifecycle(&Patch{}, customerOf(scenes, 0, nil), scenes, now, acctFn(quota.Meter{}, &calls))
	require.NoError(t, err)
	require.Equal(t, &LifecyclePlan{}, plan)
	require.Zero(t, calls)
}

// TestPlanSuspendArchivesOverflowAndStartsTimers: suspending with the caps at 0 archives every
// live scene, releases their bytes and slots, starts a timer (keyed by now, where grace and
// dormancy count from) for each unprotected one and none for a protected one; nothing is
// restored while suspended.
func TestPlanSuspendArchivesOverflowAndStartsTimers(t *testing.T) {
	scenes := []Scene{liveScene("a", 100, 1), liveScene("b", 200, 2), archivedScene("old", 50, 5, false)}
	scenes[1].Protected = true
	unslotted := liveScene("c", 30, 3)
	unslotted.Slot = false
	scenes = append(scenes, unslotted)
	p := &Patch{BillingState: str("suspended"), HasRetention: true}
	calls := 0
	plan, err := PlanLifecycle(p, customerOf(scenes, 0, n(0)), scenes, now, acctFn(quota.Meter{LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, plan.Archive)
	require.Equal(t, []string{"b"}, plan.ArchiveProtected)
	require.Equal(t, []Timer{{"a", now}, {"c", now}}, plan.Start)
	require.Empty(t, plan.Restore)
	require.Empty(t, plan.Cancel)
	require.Equal(t, quota.Delta{Bytes: -330, Splats: -2}, plan.Delta, "c holds no slot")
	require.Equal(t, 1, calls, "the account is locked to release the counters")
	require.Equal(t, []string{"a", "b", "c"}, plan.Changed())
}

// TestPlanKeepersMustBeLiveAndFit: each named keeper must be a live scene of the customer and
// together they must fit the final caps; every problem is named and nothing is planned.
func TestPlanKeepersMustBeLiveAndFit(t *testing.T) {
	scenes := []Scene{liveScene("a", 100, 1), liveScene("b", 200, 2), archivedScene("z", 10, 5, false)}
	p := &Patch{LimitBytes: n(250), MaxSplats: n(1), KeepSceneIDs: []string{"a", "b", "a", "z", "nope"},
		ProtectedIDs: []string{"ghost"}, HasRetention: true}
	calls := 0
	_, err := PlanLifecycle(p, customerOf(scenes, 250, n(1)), scenes, now, acctFn(quota.Meter{}, &calls))
	var e *apperr.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, 400, e.Status)
	require.Equal(t, []string{
		"protectedSplatIds: ghost is not a scene of this external user",
		"keepSplatIds: z is not a live scene of this external user",
		"keepSplatIds: nope is not a live scene of this external user",
		"keepSplatIds: 2 scenes to keep exceed maxSplats 1",
		"keepSplatIds: 300 bytes to keep exceed limitBytes 250",
	}, e.Issues)
	require.Zero(t, calls)
}

// TestPlanKeepersExactlyAndNoRestore: with keepSplatIds the live set is exactly the keepers
// (an empty list archives everything), and nothing is restored even on billingState active.
func TestPlanKeepersExactlyAndNoRestore(t *testing.T) {
	scenes := []Scene{liveScene("a", 100, 1), liveScene("b", 200, 2), archivedScene("z", 10, 5, false)}
	p := &Patch{BillingState: str(BillingActive), LimitBytes: n(1000), KeepSceneIDs: []string{"b"}, HasRetention: true}
	calls := 0
	plan, err := PlanLifecycle(p, customerOf(scenes, 1000, nil), scenes, now, acctFn(quota.Meter{LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, plan.Archive)
	require.Empty(t, plan.Restore, "keepers exclude restores")
	require.Equal(t, quota.Delta{Bytes: -100, Splats: -1}, plan.Delta)

	p.KeepSceneIDs = []string{}
	plan, err = PlanLifecycle(p, customerOf(scenes, 1000, nil), scenes, now, acctFn(quota.Meter{LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, plan.Archive, "an empty list keeps nothing")
}

// TestPlanProtection: protecting a kept live scene marks it; protecting an archived scene
// marks it and cancels its timer, keyed by its stored archived_at; an already protected
// scene is left alone; a protected overflow scene is archived with the mark and no timer.
func TestPlanProtection(t *testing.T) {
	scenes := []Scene{liveScene("keep", 100, 1), liveScene("over", 200, 5), archivedScene("arch", 10, 48, false),
		archivedScene("done", 10, 30, true)}
	p := &Patch{LimitBytes: n(150), ProtectedIDs: []string{"keep", "over", "arch", "done"}, BillingState: str("canceled"),
		HasRetention: true}
	calls := 0
	plan, err := PlanLifecycle(p, customerOf(scenes, 150, nil), scenes, now, acctFn(quota.Meter{LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Equal(t, []string{"over"}, plan.Archive)
	require.Equal(t, []string{"over"}, plan.ArchiveProtected)
	require.Empty(t, plan.Start)
	require.Equal(t, []string{"keep", "arch"}, plan.Protect)
	require.Equal(t, []Timer{{"arch", *hoursAgo(48)}}, plan.Cancel)
}

// TestPlanRestoreFit: on billingState active, archived scenes come back protected first, then
// most recently archived, then id, first fit under the customer caps (a big one skipped, a
// later small one still restored); a restore charges the counters again and cancels the
// timer of an unprotected scene (keyed by its archived_at) but not of a protected one, which
// has none.
func TestPlanRestoreFit(t *testing.T) {
	scenes := []Scene{
		liveScene("live", 100, 1),
		archivedScene("p", 300, 500, true),
		archivedScene("recent-big", 700, 10, false),
		archivedScene("older", 200, 20, false),
		archivedScene("oldest", 300, 30, false),
	}
	p := &Patch{BillingState: str(BillingActive), LimitBytes: n(1000), HasRetention: true}
	calls := 0
	plan, err := PlanLifecycle(p, customerOf(scenes, 1000, nil), scenes, now, acctFn(quota.Meter{UsedBytes: 100, Splats: 1, LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Empty(t, plan.Archive)
	// 100 live + p 300 = 400; recent-big would make 1100; older 600; oldest 900.
	require.Equal(t, []string{"p", "older", "oldest"}, plan.Restore)
	require.Equal(t, quota.Delta{Bytes: 800, Splats: 3}, plan.Delta)
	require.Equal(t, []Timer{{"older", *hoursAgo(20)}, {"oldest", *hoursAgo(30)}}, plan.Cancel)
	require.Equal(t, 1, calls)
}

// TestPlanRestoreRespectsTheAccount: the account bundle stops a restore unless the account
// has overage, and the account's maxSplats always does; the customer's maxSplats too.
func TestPlanRestoreRespectsTheAccount(t *testing.T) {
	scenes := []Scene{archivedScene("a", 100, 1, false), archivedScene("b", 100, 2, false)}
	p := &Patch{MaxSplats: n(5), HasRetention: true}
	restore := func(customer, acct quota.Meter) []string {
		calls := 0
		plan, err := PlanLifecycle(p, customer, scenes, now, acctFn(acct, &calls))
		require.NoError(t, err)
		return plan.Restore
	}
	cust := quota.Meter{LimitBytes: 1000, MaxSplats: n(5)}
	require.Equal(t, []string{"a"}, restore(cust, quota.Meter{UsedBytes: 850, LimitBytes: 1000}), "bundle")
	require.Equal(t, []string{"a", "b"}, restore(cust, quota.Meter{UsedBytes: 850, LimitBytes: 1000, Overage: true}), "overage")
	require.Equal(t, []string{"a"}, restore(cust, quota.Meter{Splats: 4, LimitBytes: 1 << 30, MaxSplats: n(5), Overage: true}), "account maxSplats")
	require.Equal(t, []string{"a"}, restore(quota.Meter{LimitBytes: 1000, MaxSplats: n(1)}, quota.Meter{LimitBytes: 1 << 30}), "customer maxSplats")
	require.Empty(t, restore(quota.Meter{UsedBytes: 1001, LimitBytes: 1000}, quota.Meter{LimitBytes: 1 << 30}),
		"a customer over its cap (a clone's reservation) gets nothing back")
}

// TestPlanArchivedNowAreNotRestored: a PUT that lowers the caps archives the overflow and may
// restore older archived scenes that fit the room the overflow left, never the scenes it
// archived itself.
func TestPlanArchivedNowAreNotRestored(t *testing.T) {
	scenes := []Scene{liveScene("new", 300, 1), liveScene("big", 600, 2), archivedScene("small", 50, 10, false)}
	p := &Patch{LimitBytes: n(400), HasRetention: true}
	calls := 0
	plan, err := PlanLifecycle(p, customerOf(scenes, 400, nil), scenes, now, acctFn(quota.Meter{UsedBytes: 900, Splats: 2, LimitBytes: 1 << 30}, &calls))
	require.NoError(t, err)
	require.Equal(t, []string{"big"}, plan.Archive)
	require.Equal(t, []string{"small"}, plan.Restore)
	require.Equal(t, quota.Delta{Bytes: -550, Splats: 0}, plan.Delta)
	require.Equal(t, []Timer{{"big", now}}, plan.Start)
	require.Equal(t, []Timer{{"small", *hoursAgo(10)}}, plan.Cancel)
}

// TestPlanRestoreWantedOnlyForActiveOrNewCaps: a suspend or a status-free protection change
// restores nothing, and without a counter change the account is not locked at all.
func TestPlanRestoreWantedOnlyForActiveOrNewCaps(t *testing.T) {
	scenes := []Scene{archivedScene("a", 10, 1, false)}
	for _, p := range []*Patch{
		{BillingState: str("suspended"), HasRetention: true},
		{ProtectedIDs: []string{}, HasRetention: true},
		{KeepSceneIDs: []string{}, LimitBytes: n(100), HasRetention: true},
	} {
		calls := 0
		plan, err := PlanLifecycle(p, quota.Meter{LimitBytes: 100}, scenes, now, acctFn(quota.Meter{LimitBytes: 100}, &calls))
		require.NoError(t, err)
		require.Empty(t, plan.Restore)
		require.Zero(t, calls, "no counter change, no restore: the account stays unlocked")
	}
	for _, p := range []*Patch{{ClearMax: true, HasRetention: true}, {MaxSplats: n(3), HasRetention: true},
		{BillingState: str(BillingActive), HasRetention: true}} {
		calls := 0
		plan, err := PlanLifecycle(p, quota.Meter{LimitBytes: 100}, scenes, now, acctFn(quota.Meter{LimitBytes: 100}, &calls))
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, plan.Restore)
		require.Equal(t, 1, calls)
	}
}

// TestPlanAccountErrorIsReturned: a failed account read fails the plan.
func TestPlanAccountErrorIsReturned(t *testing.T) {
	scenes := []Scene{liveScene("a", 10, 1)}
	boom := errors.New("boom")
	_, err := PlanLifecycle(&Patch{LimitBytes: n(0), HasRetention: true}, customerOf(scenes, 0, nil), scenes, now,
		func() (quota.Meter, error) { return quota.Meter{}, boom })
	require.ErrorIs(t, err, boom)
}
