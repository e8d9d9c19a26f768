//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := ctlCommand(t, ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return ctlResult{stdout: out.Bytes(), stderr: errOut.Bytes(), err: err}
}

// ctlCommand is bin/splathostctl with the stack's connection flags and args, to run in a
// directory of its own.
func ctlCommand(t *testing.T, ctx context.Context, args ...string) *execpkg.Cmd {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(root, "bin", "splathostctl")
	_, err = os.Stat(bin)
	require.NoError(t, err, "build the CLI first: make build")
	cmd := execpkg.CommandContext(ctx, bin, append([]string{"--url", env.URL, "--admin-token", env.State.AdminToken,
		"--temporal", env.Config.TemporalAddr, "--temporal-namespace", env.Config.TemporalNamespace}, args...)...)
	// Away from any .dev/stack.json, so only the flags count.
	cmd.Dir = t.TempDir()
	return cmd
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

// cliCustomer is a new pro tenant's SDK client with the customer eu provisioned, and the CLI
// arguments that act as that customer with the tenant's keys.
func cliCustomer(t *testing.T, eu string) (*splathost.Client, []string) {
	t.Helper()
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	_, err := c.PutCustomer(context.Background(), eu, splathost.CustomerUpdate{})
	require.NoError(t, err)
	return c, []string{"--public-key", in.PublicKey, "--secret-key", in.SecretKey, "--customer", eu}
}

// TestCLIUploadCtrlCPrintsAWorkingResumeCommand: SIGINT during a multipart upload stops it with
// nothing committed and prints the command that resumes it; that command, run by a shell as
// printed, sends only the missing parts and commits the scene with the file's exact bytes.
func TestCLIUploadCtrlCPrintsAWorkingResumeCommand(t *testing.T) {
	ctx := context.Background()
	c, keys := cliCustomer(t, "ctrl-c")
	// 96 MiB in 16 MiB parts, sent one at a time: the interrupt lands with parts stored and most
	// of the file still to send.
	body := fixtures.PLY((96 << 20) / fixtures.TrainingPLYStride(0))
	path := filepath.Join(t.TempDir(), "big.ply")
	require.NoError(t, os.WriteFile(path, body, 0o644))
	args := append([]string{"upload", path, "--multipart", "--concurrency", "1", "--title", "interrupted"}, keys...)

	runCtx, cancel := context.WithTimeout(ctx, hangGuard) // the upload's progress lines are the test's progress
	defer cancel()
	cmd := ctlCommand(t, runCtx, args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	// Progress lines come at each tenth of the bytes. Once a fifth is sent, the second part is
	// going, so the first is stored: interrupt then, as Ctrl-C would.
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		var pct int
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, "upload:"), "%d%%", &pct); err == nil && pct >= 20 && !signalled {
			require.Less(t, pct, 100, "the upload ended before the interrupt: %s", log.String())
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			signalled = true
		}
	}
	err = cmd.Wait()
	require.True(t, signalled, "no progress seen: %s", log.String())
	var exit *execpkg.ExitError
	require.ErrorAs(t, err, &exit, "%s", log.String())
	require.Equal(t, 130, exit.ExitCode(), "%s", log.String())
	require.Empty(t, stdout.String())

	// The last lines say what happened and print the resume command.
	out := log.String()
	require.Contains(t, out, "splathostctl: upload interrupted; nothing was committed and the parts already stored are kept. Resume it with:\n  ")
	resume := strings.TrimSpace(out[strings.LastIndex(out, "Resume it with:\n")+len("Resume it with:\n"):])
	require.NotContains(t, resume, "\n", "one command line")
	uploadID := resume[strings.LastIndex(resume, "--resume ")+len("--resume "):]
	secret := keys[slices.Index(keys, "--secret-key")+1]
	require.NotContains(t, out, secret, "no secret on the terminal")
	require.NotContains(t, out, env.State.AdminToken)
	asRun := strings.NewReplacer(secret, `"$SPLATHOST_SECRET_KEY"`, env.State.AdminToken, `"$SPLATHOST_ADMIN_TOKEN"`).
		Replace(strings.Join(append([]string{cmd.Path}, cmd.Args[1:]...), " "))
	require.Equal(t, asRun+" --resume "+uploadID, resume, "the command as run, its secret named by its variable, plus --resume")

	// Nothing was committed; some parts, not all, are stored.
	page, err := c.ListSplats(ctx, splathost.ListSplatsOptions{ExternalUserID: "ctrl-c"})
	require.NoError(t, err)
	require.Empty(t, page.Splats, "no commit")
	st, err := c.GetMultipartUpload(ctx, "ctrl-c", uploadID)
	require.NoError(t, err)
	require.NotEqual(t, "completed", st.State)
	require.NotEmpty(t, st.Parts, "parts stored before the interrupt")
	require.NotEmpty(t, st.MissingParts, "parts left after the interrupt")

	// The printed command, run by a shell, finishes the upload and commits.
	sh := execpkg.CommandContext(runCtx, "sh", "-c", resume)
	sh.Dir = t.TempDir()
	sh.Env = append(os.Environ(), "SPLATHOST_SECRET_KEY="+secret, "SPLATHOST_ADMIN_TOKEN="+env.State.AdminToken)
	var shOut, shErr bytes.Buffer
	sh.Stdout, sh.Stderr = &shOut, &shErr
	require.NoError(t, sh.Run(), "%s", shErr.String())
	first := strings.SplitN(shErr.String(), "\n", 2)[0]
	var startPct int
	_, err = fmt.Sscanf(strings.TrimPrefix(first, "upload:"), "%d%%", &startPct)
	require.NoError(t, err, first)
	require.GreaterOrEqual(t, startPct, 16, "the resumed upload starts from the stored parts: %s", first)
	page, err = c.ListSplats(ctx, splathost.ListSplatsOptions{ExternalUserID: "ctrl-c"})
	require.NoError(t, err)
	require.Len(t, page.Splats, 1)
	sp := page.Splats[0]
	require.Equal(t, "interrupted", sp.Title)
	require.EqualValues(t, len(body), sp.FileSizeBytes)
	require.True(t, strings.HasPrefix(shOut.String(), "uploaded and committed scene "+sp.ID+` "interrupted" (96 MiB) for ctrl-c`+"\n"), shOut.String())
	got := fetchAsset(t, "GET", sp.SplatURL, nil)
	require.Equal(t, 200, got.status)
	require.Equal(t, sha256.Sum256(body), sha256.Sum256(got.body))
}

// TestCLIClone: `clone` waits for the copy and prints the job's progress; `--async` prints the
// job and the command that waits for it, and `--job` waits for it.
func TestCLIClone(t *testing.T) {
	ctx := context.Background()
	c, keys := cliCustomer(t, "cloner")
	src, err := c.UploadFile(ctx, "cloner", writeSplat(t, t.TempDir(), 100), splathost.UploadOptions{Title: "source"})
	require.NoError(t, err)

	r := runCtl(t, append([]string{"clone", src.SplatID}, keys...)...)
	require.NoError(t, r.err, "%s", r.stderr)
	require.Regexp(t, `^clone: (job \S+ started|\d+/[1-9]\d* objects copied)\n`, string(r.stderr), "the job's progress from its first answer")
	lines := strings.Split(string(r.stdout), "\n")
	require.Regexp(t, `^cloned scene `+src.SplatID+` into [0-9a-f]{24} "source \(Copy\)" \(3\.1 KiB\) for cloner$`, lines[0])
	copyID := strings.Fields(lines[0])[4]
	sp, err := c.GetSplat(ctx, "cloner", copyID)
	require.NoError(t, err)
	require.Equal(t, "source (Copy)", sp.Title)
	require.Contains(t, lines[2], "3.1 KiB", "the table's row, under its header")
	require.NotContains(t, lines[2], "3200", "without --bytes sizes are in units")

	var job splathost.CloneJob
	ctlJSON(t, &job, append([]string{"clone", src.SplatID, "--async"}, keys...)...)
	require.NotEmpty(t, job.JobID)
	require.Equal(t, src.SplatID, job.SourceSplatID)
	var done splathost.CloneResult
	ctlJSON(t, &done, append([]string{"clone", src.SplatID, "--job", job.JobID}, keys...)...)
	require.Equal(t, src.SplatID, done.SourceSplatID)
	require.NotEqual(t, copyID, done.SplatID)
	_, err = c.GetSplat(ctx, "cloner", done.SplatID)
	require.NoError(t, err)

	// The human --async output names the job and the command that waits for it.
	r = runCtl(t, append([]string{"--bytes", "clone", src.SplatID, "--async"}, keys...)...)
	require.NoError(t, r.err, "%s", r.stderr)
	require.Regexp(t, `^started cloning scene `+src.SplatID+` for cloner: job \S+\n`, string(r.stdout))
	jobID := strings.Fields(string(r.stdout))[7]
	require.Contains(t, string(r.stdout), "--job "+jobID+"\n")
	require.NotContains(t, string(r.stdout), "--async")
	r = runCtl(t, append([]string{"--bytes", "clone", src.SplatID, "--job", jobID}, keys...)...)
	require.NoError(t, r.err, "%s", r.stderr)
	require.Regexp(t, `\(3200\) for cloner\n`, string(r.stdout), "--bytes prints the count")

	// The scene's workflows are listed by the scene alone, and the customer's by the keys.
	type wf struct {
		Type             string         `json:"type"`
		SearchAttributes map[string]any `json:"searchAttributes"`
	}
	// Visibility catches up with the closed jobs within moments; the rows listed are the mark.
	var rows []wf
	eventually(t, "the scene's clone jobs listed", func() bool {
		rows = nil
		ctlJSON(t, &rows, "workflows", "list", "--scene", src.SplatID, "--type", "clone")
		return len(rows) == 3
	}, func() string { return fmt.Sprint(len(rows), " rows") })
	for _, w := range rows {
		require.Equal(t, src.SplatID, w.SearchAttributes["sourceSplatId"])
	}
	var mine []wf
	eventually(t, "the customer's clone jobs listed", func() bool {
		mine = nil
		ctlJSON(t, &mine, append([]string{"workflows", "list", "--type", "clone"}, keys...)...)
		return len(mine) == 3
	}, func() string { return fmt.Sprint(len(mine), " rows") })
	require.Equal(t, rows[0].SearchAttributes["integrationId"], mine[0].SearchAttributes["integrationId"])
	require.NotEmpty(t, mine[0].SearchAttributes["integrationId"])
}
