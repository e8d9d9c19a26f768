//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/testenv"
	splathost "github.com/splathost/splathost/sdk/go"
	"github.com/splathost/splathost/workflows"
)

// The operator CLI as built by `make build` (bin/splathostctl), run against the real stack.

// ctlResult is one run of the CLI.
type ctlResult struct {
	stdout, stderr []byte
	err            error
}

// ctl runs bin/splathostctl with the stack's connection flags and --json.
func ctl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	return runCtl(t, append([]string{"--json"}, args...)...)
}

// runCtl runs bin/splathostctl with the stack's connection flags.
func runCtl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(root, "bin", "splathostctl")
	_, err = os.Stat(bin)
	require.NoError(t, err, "build the CLI first: make build")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := execpkg.CommandContext(ctx, bin, append([]string{"--url", env.URL, "--admin-token", env.State.AdminToken,
		"--temporal", env.Config.TemporalAddr, "--temporal-namespace", env.Config.TemporalNamespace}, args...)...)
	// Away from any .dev/stack.json, so only the flags count.
	cmd.Dir = t.TempDir()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return ctlResult{stdout: out.Bytes(), stderr: errOut.Bytes(), err: err}
}

// ctlJSON runs the CLI, requires success and decodes its JSON output into out.
func ctlJSON(t *testing.T, out any, args ...string) ctlResult {
	t.Helper()
	r := ctl(t, args...)
	require.NoError(t, r.err, "splathostctl %v: %s", args, r.stderr)
	require.NoError(t, json.Unmarshal(r.stdout, out), "%s", r.stdout)
	return r
}

// ctlError runs the CLI, requires failure and returns the {"error": …} it printed.
func ctlError(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := ctl(t, args...)
	require.Error(t, r.err, "splathostctl %v should fail: %s", args, r.stdout)
	var out struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.stdout, &out), "%s", r.stdout)
	require.NotEmpty(t, r.stderr)
	return out.Error
}

func TestCLIAccountsAndIntegrations(t *testing.T) {
	ctx := context.Background()
	op := operatorSDK(t)
	var acct splathost.Account
	ctlJSON(t, &acct, "accounts", "create", "--name", "cli-shop", "--plan", "pro", "--storage-bundle", "2GiB")
	require.Regexp(t, `^[0-9a-f]{24}$`, acct.ID)
	got, err := op.GetAccount(ctx, acct.ID)
	require.NoError(t, err)
	require.Equal(t, "cli-shop", got.Name)
	require.EqualValues(t, 2<<30, got.StorageBundleBytes)
	require.Nil(t, got.MaxSplats)

	var updated splathost.Account
	ctlJSON(t, &updated, "accounts", "update", acct.ID, "--max-splats", "7", "--name", "cli-shop-2")
	require.EqualValues(t, 7, *updated.MaxSplats)
	require.Equal(t, splathost.PlanPro, updated.Plan, "flags not given are left alone")
	ctlJSON(t, &updated, "accounts", "get", acct.ID)
	require.Equal(t, "cli-shop-2", updated.Name)
	ctlJSON(t, &updated, "accounts", "update", acct.ID, "--max-splats", "none")
	require.Nil(t, updated.MaxSplats)

	var in splathost.Integration
	ctlJSON(t, &in, "integrations", "create", "--account", acct.ID, "--product-slug", "cli.example.com", "--capabilities", "viewer")
	require.Equal(t, []string{"viewer"}, in.Capabilities)
	require.True(t, strings.HasPrefix(in.SecretKey, "msk_"))
	c, err := splathost.New(env.URL, splathost.WithKeys(in.PublicKey, in.SecretKey))
	require.NoError(t, err)
	_, err = c.PutCustomer(ctx, "eu", splathost.CustomerUpdate{})
	require.NoError(t, err)

	var shown splathost.Integration
	ctlJSON(t, &shown, "integrations", "get", in.ID)
	require.Equal(t, in.PublicKey, shown.PublicKey)
	require.Empty(t, shown.SecretKey)

	var rotated splathost.Integration
	ctlJSON(t, &rotated, "integrations", "rotate", in.ID)
	require.True(t, strings.HasPrefix(rotated.SecretKey, "msk_"))
	require.NotEqual(t, in.SecretKey, rotated.SecretKey)
	_, err = c.GetCustomer(ctx, "eu")
	require.True(t, splathost.IsUnauthorized(err), "the old secret gets 401: %v", err)
	c, err = splathost.New(env.URL, splathost.WithKeys(in.PublicKey, rotated.SecretKey))
	require.NoError(t, err)
	_, err = c.GetCustomer(ctx, "eu")
	require.NoError(t, err)

	var revoked splathost.Integration
	ctlJSON(t, &revoked, "integrations", "revoke", in.ID)
	require.True(t, revoked.Revoked)
	_, err = c.GetCustomer(ctx, "eu")
	var apiErr *splathost.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 410, apiErr.Status)

	// Errors: the envelope as JSON on stdout and a non-zero exit.
	e := ctlError(t, "accounts", "get", "0123456789abcdef01234567")
	require.EqualValues(t, 404, e["status"])
	e = ctlError(t, "accounts", "create", "--name", "x", "--storage-bundle", "1", "--plan", "gold")
	require.EqualValues(t, 400, e["status"])
	require.NotEmpty(t, e["issues"])
	r := ctl(t, "--admin-token", "wrong", "accounts", "get", acct.ID)
	require.Error(t, r.err)
	require.Contains(t, string(r.stdout), `"status":401`)
}

func TestCLICustomersUsageAndUpload(t *testing.T) {
	ctx := context.Background()
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	_, err := c.PutCustomer(ctx, "uploader", splathost.CustomerUpdate{MaxSplats: splathost.Value[int64](4)})
	require.NoError(t, err)
	keys := []string{"--public-key", in.PublicKey, "--secret-key", in.SecretKey, "--customer", "uploader"}

	// A file: stderr is a pipe here, so progress comes as plain lines.
	var file splathost.CommitResult
	r := ctlJSON(t, &file, append([]string{"upload", writeSplat(t, t.TempDir(), 100), "--title", "From the CLI"}, keys...)...)
	require.Contains(t, string(r.stderr), "upload: 100%")
	require.NotContains(t, string(r.stderr), "\r", "no bar redraws outside a terminal")
	sp, err := c.GetSplat(ctx, "uploader", file.SplatID)
	require.NoError(t, err)
	require.Equal(t, "From the CLI", sp.Title)
	require.EqualValues(t, 3200, sp.FileSizeBytes)

	// A LOD folder.
	dir, files := writeLODFolder(t, 50)
	var lod splathost.CommitResult
	r = ctlJSON(t, &lod, append([]string{"upload", dir, "--concurrency", "4"}, keys...)...)
	require.Contains(t, string(r.stderr), "50/50 files")
	sp, err = c.GetSplat(ctx, "uploader", lod.SplatID)
	require.NoError(t, err)
	require.Equal(t, splathost.SplatTypeLOD, sp.SplatType)
	require.Equal(t, 50, files)

	// The operator's view of the customer equals the integrator's.
	var usage splathost.CustomerUsage
	ctlJSON(t, &usage, "customers", "usage", in.ID, "uploader")
	want, err := c.CustomerUsage(ctx, "uploader")
	require.NoError(t, err)
	require.Equal(t, *want, usage)
	require.EqualValues(t, 2, usage.Splats.Used)
	require.EqualValues(t, 4, *usage.Splats.Limit)
	e := ctlError(t, "customers", "usage", in.ID, "nobody")
	require.EqualValues(t, 404, e["status"])

	// Wrong keys: the upload fails with the 401.
	e = ctlError(t, "upload", dir, "--public-key", in.PublicKey, "--secret-key", "msk_wrong", "--customer", "uploader")
	require.EqualValues(t, 401, e["status"])
}

func TestCLIWorkflowsFindACloneJobByIntegrationAndCustomer(t *testing.T) {
	ctx := context.Background()
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	cloner := `o'cloner \ x` // quotes and backslashes must survive the visibility query
	_, err := c.PutCustomer(ctx, cloner, splathost.CustomerUpdate{})
	require.NoError(t, err)
	_, err = c.PutCustomer(ctx, "bystander", splathost.CustomerUpdate{})
	require.NoError(t, err)
	src, err := c.UploadFile(ctx, cloner, writeSplat(t, t.TempDir(), 20), splathost.UploadOptions{})
	require.NoError(t, err)
	_, job, err := c.StartClone(ctx, cloner, src.SplatID, splathost.CloneOptions{RespondAsync: true})
	require.NoError(t, err)
	done, err := c.WaitClone(ctx, cloner, src.SplatID, job.JobID, splathost.CloneOptions{PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)

	type row struct {
		WorkflowID       string         `json:"workflowId"`
		RunID            string         `json:"runId"`
		Type             string         `json:"type"`
		Status           string         `json:"status"`
		SearchAttributes map[string]any `json:"searchAttributes"`
		Clone            *struct {
			JobID         string `json:"jobId"`
			Running       bool   `json:"running"`
			SourceSplatID string `json:"sourceSplatId"`
			CopiedObjects int    `json:"copiedObjects"`
			TotalObjects  int    `json:"totalObjects"`
			SplatID       string `json:"splatId"`
		} `json:"clone"`
	}
	// Visibility is eventually consistent: the closed job shows within moments.
	var rows []row
	require.Eventually(t, func() bool {
		rows = nil
		ctlJSON(t, &rows, "workflows", "list", "--integration", in.ID, "--customer", cloner, "--type", "clone")
		return len(rows) == 1 && rows[0].Status == "Completed"
	}, 20*time.Second, 300*time.Millisecond, "rows %+v", rows)
	w := rows[0]
	require.Equal(t, job.JobID, w.RunID, "the job id is the run id")
	require.Equal(t, workflows.CloneSceneWorkflow, w.Type)
	require.Equal(t, cloner, w.SearchAttributes["externalUserId"])
	require.Equal(t, src.SplatID, w.SearchAttributes["sourceSplatId"])
	require.NotNil(t, w.Clone)
	require.False(t, w.Clone.Running)
	require.Equal(t, done.SplatID, w.Clone.SplatID)
	require.Equal(t, w.Clone.TotalObjects, w.Clone.CopiedObjects)

	var none []row
	ctlJSON(t, &none, "workflows", "list", "--integration", in.ID, "--customer", "bystander")
	require.Empty(t, none)
	ctlJSON(t, &none, "workflows", "list", "--integration", in.ID, "--type", "retention")
	require.Empty(t, none)

	var d row
	ctlJSON(t, &d, "workflows", "describe", w.WorkflowID, w.RunID)
	require.Equal(t, "Completed", d.Status)
	require.Equal(t, done.SplatID, d.Clone.SplatID)
	require.Equal(t, src.SplatID, d.Clone.SourceSplatID)
	e := ctlError(t, "workflows", "describe", "clone/nothing/here")
	require.Contains(t, e["message"], "not found")

	// Tables are the default output.
	r := ctl(t, "workflows", "list", "--integration", in.ID)
	require.NoError(t, r.err)
	require.Contains(t, string(r.stdout), w.WorkflowID)
}

func TestCLISweepOrphansStartsARun(t *testing.T) {
	var res struct {
		ScheduleID string    `json:"scheduleId"`
		WorkflowID string    `json:"workflowId"`
		RunID      string    `json:"runId"`
		StartedAt  time.Time `json:"startedAt"`
	}
	ctlJSON(t, &res, "sweep", "orphans")
	require.Equal(t, workflows.OrphanSweepScheduleID, res.ScheduleID)
	require.True(t, strings.HasPrefix(res.WorkflowID, workflows.OrphanSweepScheduleID), res.WorkflowID)
	require.WithinDuration(t, time.Now(), res.StartedAt, time.Minute)
	ctx := context.Background()
	var sweep workflows.SweepResult
	require.NoError(t, env.Process.Temporal.GetWorkflow(ctx, res.WorkflowID, res.RunID).Get(ctx, &sweep), "the run exists and finishes")
}
