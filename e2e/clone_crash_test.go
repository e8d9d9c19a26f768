package e2e

import (
	"context"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/activities"
	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/clonejob"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/internal/spawn"
	"github.com/splathost/splathost/internal/testenv"
	"github.com/splathost/splathost/workflows"
)

// workerProcess runs the real worker binary (bin/worker) against the test stack, serving
// queue, with its log in the test's data directory. It leaves the product's schedules alone.
func workerProcess(t *testing.T, queue, logName string) *osexec.Cmd {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	health := ln.Addr().String()
	require.NoError(t, ln.Close())
	// The child gets the whole test configuration (ClickHouse included: the worker refuses to
	// start without it), on its own task queue and health port, without the schedules.
	c := env.Config
	c.TaskQueue, c.WorkerHealthAddr, c.WorkerSchedules = queue, health, false
	cmd := osexec.Command(filepath.Join(root, "bin", "worker"))
	cmd.Env = c.Environ()
	logf, err := os.Create(filepath.Join(env.Dir, logName))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, spawn.Start(cmd))
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	return cmd
}

// TestCloneSurvivesWorkerKill kills the worker process (SIGKILL) in the middle of copying a
// 2 000-object LOD folder and starts a new one: the job finishes, the bucket holds exactly the
// source's objects under the clone (none missing, none extra), and every object copied before
// the kill is untouched — copied once.
func TestCloneSurvivesWorkerKill(t *testing.T) {
	a := newTenant(t)
	src := lodScene(t, a, "crashy", 2000)
	ctx := context.Background()
	owner := customerRecord(t, a, "crashy")

	// The job runs on its own task queue, served only by the worker process this test kills;
	// one copy at a time keeps it running long enough to be killed in the middle.
	queue := "clone-crash-" + ids.New()
	first := workerProcess(t, queue, "worker-crash-1.log")
	in := workflows.CloneInput{JobID: ids.New(), SourceSceneID: src["id"].(string), IntegrationID: a.IntegrationID,
		AccountID: a.AccountID, OwnerRecordID: owner.ID, ExternalUserID: "crashy", ClonedAt: time.Now(),
		AbandonAfter: 10 * time.Minute, Concurrency: 1}
	runID, err := workflows.StartClone(ctx, env.Process.Temporal, queue, in)
	require.NoError(t, err)
	wfID := workflows.CloneWorkflowID(a.IntegrationID, owner.ID)
	prefix := activities.ClonePrefix(a.IntegrationID, owner.ID, in.JobID)

	require.Eventually(t, func() bool { return len(listKeys(t, prefix)) >= 100 }, time.Minute, 10*time.Millisecond,
		"the copy starts")
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	atKill := listKeys(t, prefix)
	require.Less(t, len(atKill), 2000, "killed in the middle of the copy")
	st, err := workflows.DescribeClone(ctx, env.Process.Temporal, wfID, runID)
	require.NoError(t, err)
	require.True(t, st.Running)

	workerProcess(t, queue, "worker-crash-2.log")
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	workflows.WaitClone(wait, env.Process.Temporal, wfID, runID)
	st, err = workflows.DescribeClone(ctx, env.Process.Temporal, wfID, runID)
	require.NoError(t, err)
	require.False(t, st.Running, "the job finished after the restart")
	require.NoError(t, st.Err)
	require.Equal(t, in.JobID, st.Result.SplatID)

	// The audit: the job's folder holds exactly the source folder, object for object.
	after := listKeys(t, prefix)
	require.Len(t, after, 2000, "no orphan object in the job's folder")
	srcFolder := *mustScene(t, src["id"].(string)).LodFolderKey + "/"
	dstFolder := *mustScene(t, in.JobID).LodFolderKey + "/"
	require.True(t, strings.HasPrefix(dstFolder, prefix))
	requireSameFolder(t, srcFolder, dstFolder, 2000)
	for k, at := range atKill {
		require.True(t, after[k].Equal(at), "%s was copied again after the restart", k)
	}
	used, _ := usageOf(t, a, "crashy")
	require.EqualValues(t, 2*int64(src["fileSizeBytes"].(float64)), used)
}

// customerRecord reads a customer's row.
func customerRecord(t *testing.T, tn tenant, eu string) *ent.ExternalUser {
	t.Helper()
	u, err := env.Process.DB.Ent.ExternalUser.Query().
		Where(externaluser.IntegrationID(tn.IntegrationID), externaluser.ExternalUserID(eu)).Only(context.Background())
	require.NoError(t, err)
	return u
}

// mustScene reads a scene row.
func mustScene(t *testing.T, id string) *ent.Scene {
	t.Helper()
	sc, err := env.Process.DB.Ent.Scene.Get(context.Background(), id)
	require.NoError(t, err)
	return sc
}

// TestCloneOfADeletedCustomerRollsBack deletes the customer while its clone is copying: the
// reservation goes with the customer (the account is released once), and the job creates
// nothing and leaves no object behind.
func TestCloneOfADeletedCustomerRollsBack(t *testing.T) {
	a := newTenant(t)
	src := lodScene(t, a, "leaving", 1000)
	ctx := context.Background()
	owner := customerRecord(t, a, "leaving")
	h := a.keys("leaving")
	h["Prefer"] = "respond-async"
	r := do(t, "POST", clonePath(src["id"].(string)), h, nil)
	require.Equal(t, 202, r.Status, string(r.Raw))
	jobID := r.Body["jobId"].(string)
	requireDeleted := do(t, "DELETE", "/api/v1/external-user", a.keys("leaving"), nil)
	require.Equal(t, 200, requireDeleted.Status, string(requireDeleted.Raw))

	wfID := workflows.CloneWorkflowID(a.IntegrationID, owner.ID)
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	workflows.WaitClone(wait, env.Process.Temporal, wfID, jobID)
	st, err := workflows.DescribeClone(ctx, env.Process.Temporal, wfID, jobID)
	require.NoError(t, err)
	require.False(t, st.Running)
	e := activities.ClientErrorOf(st.Err)
	require.NotNil(t, e, "%v", st.Err)
	// Where the deletion lands decides the answer: before the reservation, the reservation
	// refuses a deleted customer (401, as for any inactive one); after it, the job finds its
	// reservation gone when it finalizes (404). Either way it rolled back.
	require.Contains(t, []int{401, 404}, e.Status, "%v", st.Err)

	used, slots := accountOf(t, a)
	require.Zero(t, used, "the account is released of the scene and the reservation, once")
	require.Zero(t, slots)
	n, err := env.Process.DB.Ent.CloneJob.Query().Where(clonejob.OwnerID(owner.ID)).Count(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "no reservation is left")
	require.Empty(t, listKeys(t, "i/"+a.IntegrationID+"/u/"+owner.ID+"/clone/"), "no copy is left")
}
