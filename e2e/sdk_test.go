//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/fixtures"
	splathost "github.com/splathost/splathost/sdk/go"
)

// The Go SDK against the real stack: every call goes through the in-process gateway.

// operatorSDK is an SDK client with the admin token.
func operatorSDK(t *testing.T) *splathost.Client {
	t.Helper()
	c, err := splathost.New(env.URL, splathost.WithAdminToken(env.State.AdminToken))
	require.NoError(t, err)
	return c
}

// sdkTenant creates an account on plan with bundle bytes and one integration through the SDK's
// operator calls, and returns the integration with a client holding its keys.
func sdkTenant(t *testing.T, plan splathost.Plan, bundle int64) (*splathost.Integration, *splathost.Client) {
	t.Helper()
	ctx := context.Background()
	op := operatorSDK(t)
	acct, err := op.CreateAccount(ctx, splathost.NewAccount{Name: "sdk-" + t.Name(), Plan: plan, StorageBundleBytes: bundle})
	require.NoError(t, err)
	in, err := op.CreateIntegration(ctx, splathost.NewIntegration{AccountID: acct.ID, ProductSlug: "sdk.example.com",
		Capabilities: []string{"viewer", "editor"}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(in.SecretKey, "msk_") && strings.HasPrefix(in.PublicKey, "mpk_"), "%+v", in)
	c, err := splathost.New(env.URL, splathost.WithKeys(in.PublicKey, in.SecretKey))
	require.NoError(t, err)
	return in, c
}

// writeSplat writes a .splat scene of n records into dir and returns its path.
func writeSplat(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, "scene.splat")
	require.NoError(t, os.WriteFile(p, fixtures.Splat(n), 0o644))
	return p
}

// writeLODFolder writes the fixture LOD folder of at least n files into a folder named park,
// and returns the folder and its file count.
func writeLODFolder(t *testing.T, n int) (string, int) {
	t.Helper()
	folder := lodFolderOf(n)
	dir := filepath.Join(t.TempDir(), "park")
	for p, b := range folder {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), b, 0o644))
	}
	return dir, len(folder)
}

// progressLog records an upload's progress calls.
type progressLog struct {
	mu    sync.Mutex
	calls []splathost.Progress
}

func (l *progressLog) add(p splathost.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, p)
}

// requireComplete checks the progress only grew within its totals and ended at them.
func (l *progressLog) requireComplete(t *testing.T, files int) {
	t.Helper()
	require.NotEmpty(t, l.calls)
	var prevFiles int
	for _, p := range l.calls {
		require.LessOrEqual(t, p.BytesDone, p.BytesTotal)
		require.GreaterOrEqual(t, p.FilesDone, prevFiles)
		prevFiles = p.FilesDone
	}
	last := l.calls[len(l.calls)-1]
	require.Equal(t, files, last.FilesTotal)
	require.Equal(t, files, last.FilesDone)
	require.Equal(t, last.BytesTotal, last.BytesDone)
}

func TestSDKUploadListPatchAndDelete(t *testing.T) {
	ctx := context.Background()
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	u, err := c.PutCustomer(ctx, "maker", splathost.CustomerUpdate{LimitBytes: splathost.Ptr[int64](100 << 20),
		MaxSplats: splathost.Value[int64](5), DisplayName: splathost.Value("Maker"), Metadata: splathost.Value(map[string]any{"tier": "gold"})})
	require.NoError(t, err)
	require.Equal(t, "maker", u.ExternalUserID)
	require.Equal(t, in.ID, u.IntegrationID)
	require.EqualValues(t, 100<<20, u.LimitBytes)
	require.EqualValues(t, 5, *u.MaxSplats)
	require.Equal(t, "gold", u.Metadata["tier"])
	// Null removes the cap, an omitted field keeps its value.
	u, err = c.PutCustomer(ctx, "maker", splathost.CustomerUpdate{MaxSplats: splathost.Null[int64]()})
	require.NoError(t, err)
	require.Nil(t, u.MaxSplats)
	require.Equal(t, "Maker", *u.DisplayName)

	// A single file, with progress.
	var fileProgress progressLog
	path := writeSplat(t, t.TempDir(), 200)
	res, err := c.UploadFile(ctx, "maker", path, splathost.UploadOptions{Title: "Garden", OnProgress: fileProgress.add})
	require.NoError(t, err)
	fileProgress.requireComplete(t, 1)
	require.EqualValues(t, 200*32, fileProgress.calls[0].BytesTotal)
	require.Equal(t, res.SplatID, res.Splat.ID)
	require.Equal(t, splathost.SplatTypeFile, res.Splat.SplatType)
	require.EqualValues(t, 200*32, res.Splat.FileSizeBytes)
	require.EqualValues(t, 200*32, res.Usage.UsedBytes, "the account meter")

	// A 50-file LOD folder, with progress over its files.
	dir, files := writeLODFolder(t, 50)
	require.Equal(t, 50, files)
	var lodProgress progressLog
	lod, err := c.UploadFolder(ctx, "maker", dir, splathost.UploadOptions{Concurrency: 4, OnProgress: lodProgress.add})
	require.NoError(t, err)
	lodProgress.requireComplete(t, 50)
	require.Equal(t, splathost.SplatTypeLOD, lod.Splat.SplatType)
	require.Equal(t, "park", lod.Splat.Title, "the folder name is the default title")
	require.Equal(t, lodProgress.calls[0].BytesTotal, lod.Splat.FileSizeBytes)

	got, err := c.GetSplat(ctx, "maker", lod.SplatID)
	require.NoError(t, err)
	require.NotNil(t, got.LodFolderKey)
	require.True(t, got.IsOwner)

	// List: the customer's two scenes, paged one at a time.
	var listed []string
	opts := splathost.ListSplatsOptions{ExternalUserID: "maker", Limit: 1, Sort: "createdAt", Dir: "asc"}
	for {
		page, err := c.ListSplats(ctx, opts)
		require.NoError(t, err)
		for _, s := range page.Splats {
			listed = append(listed, s.ID)
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	require.Equal(t, []string{res.SplatID, lod.SplatID}, listed)

	patched, err := c.PatchSplat(ctx, "maker", res.SplatID, splathost.SplatPatch{Title: splathost.Ptr("Garden at dusk"),
		Visibility: splathost.Ptr(splathost.Public), AllowClone: splathost.Ptr(true)})
	require.NoError(t, err)
	require.Equal(t, "Garden at dusk", patched.Title)
	require.Equal(t, splathost.Public, patched.Visibility)
	require.True(t, patched.AllowClone)
	featured, err := c.PatchSplat(ctx, "", res.SplatID, splathost.SplatPatch{Featured: splathost.Ptr(true)})
	require.NoError(t, err)
	require.True(t, featured.Featured)
	page, err := c.ListSplats(ctx, splathost.ListSplatsOptions{Featured: true, Sort: "featuredAt"})
	require.NoError(t, err)
	require.Len(t, page.Splats, 1)
	trending, err := c.TrendingSplats(ctx, splathost.TrendingOptions{WindowDays: 7, Limit: 5})
	require.NoError(t, err)
	require.Equal(t, 7, trending.Info.WindowDays)
	require.Equal(t, res.SplatID, trending.Splats[0].ID, "the one public scene is backfilled")
	stats, err := c.SplatAnalytics(ctx, "maker", res.SplatID, 3)
	require.NoError(t, err)
	require.Equal(t, res.SplatID, stats.SplatID)
	require.Len(t, stats.Days, 3)
	require.Equal(t, time.Now().UTC().Format(time.DateOnly), stats.Days[2].Date, "today is last")
	require.Equal(t, splathost.ViewCounts{}, stats.Totals, "no view yet")

	usage, err := c.CustomerUsage(ctx, "maker")
	require.NoError(t, err)
	require.EqualValues(t, 2, usage.Splats.Used)
	require.Equal(t, res.Splat.FileSizeBytes+lod.Splat.FileSizeBytes, usage.Storage.UsedBytes)

	s, err := c.MintSession(ctx, splathost.SessionRequest{Type: splathost.SessionViewer, SplatID: res.SplatID, ExternalUserID: "maker"})
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(s.SessionToken, "."), "a JWT")
	require.WithinDuration(t, time.Now().Add(15*time.Minute), s.ExpiresAt, time.Minute)

	require.NoError(t, c.DeleteSplat(ctx, "maker", res.SplatID))
	_, err = c.GetSplat(ctx, "maker", res.SplatID)
	require.True(t, splathost.IsNotFound(err), "%v", err)

	del, err := c.DeleteCustomer(ctx, "maker")
	require.NoError(t, err)
	require.Equal(t, 1, del.DeletedSplatCount)
	require.Equal(t, "deleted", del.ExternalUser.Status)
}

func TestSDKCloneRespondsAt201AndPollsA202ToCompletion(t *testing.T) {
	ctx := context.Background()
	_, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	_, err := c.PutCustomer(ctx, "maker", splathost.CustomerUpdate{})
	require.NoError(t, err)
	src, err := c.UploadFile(ctx, "maker", writeSplat(t, t.TempDir(), 50), splathost.UploadOptions{Title: "Source"})
	require.NoError(t, err)

	// Within the request's time budget: 201.
	dup, err := c.CloneAndWait(ctx, "maker", src.SplatID, splathost.CloneOptions{})
	require.NoError(t, err)
	require.Equal(t, src.SplatID, dup.SourceSplatID)
	require.Equal(t, "Source (Copy)", dup.Splat.Title)
	require.Equal(t, src.Splat.FileSizeBytes, dup.Splat.FileSizeBytes)

	// Asked to answer at once: a 202 job, polled to the same payload.
	res, job, err := c.StartClone(ctx, "maker", src.SplatID, splathost.CloneOptions{RespondAsync: true})
	require.NoError(t, err)
	require.Nil(t, res)
	require.NotEmpty(t, job.JobID)
	require.Equal(t, src.SplatID, job.SourceSplatID)
	done, err := c.WaitClone(ctx, "maker", src.SplatID, job.JobID, splathost.CloneOptions{PollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NotEqual(t, dup.SplatID, done.SplatID)
	got, err := c.GetSplat(ctx, "maker", done.SplatID)
	require.NoError(t, err)
	require.Equal(t, splathost.Private, got.Visibility)

	// The same through CloneAndWait, which polls the 202 itself.
	again, err := c.CloneAndWait(ctx, "maker", src.SplatID, splathost.CloneOptions{RespondAsync: true, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, src.SplatID, again.SourceSplatID)

	// A job id that is not one: the poll's 404 as an APIError.
	_, _, err = c.PollClone(ctx, "maker", src.SplatID, "0123456789abcdef0123456789abcdef")
	var apiErr *splathost.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusNotFound, apiErr.Status)
}

func TestSDKQuotaAndPlanErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	_, c := sdkTenant(t, splathost.PlanFree, 1<<30)
	_, err := c.PutCustomer(ctx, "small", splathost.CustomerUpdate{LimitBytes: splathost.Ptr[int64](1000)})
	require.NoError(t, err)

	// 2 048 bytes against a 1 000-byte allocation.
	_, err = c.UploadFile(ctx, "small", writeSplat(t, t.TempDir(), 64), splathost.UploadOptions{})
	var apiErr *splathost.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusRequestEntityTooLarge, apiErr.Status)
	require.Equal(t, splathost.CodeStorageQuotaExceeded, apiErr.Code)
	require.NotEmpty(t, apiErr.RequestID, "the gateway's request id, for support")
	require.Equal(t, &splathost.StorageQuotaDetails{Scope: "customer", UsedBytes: 0, LimitBytes: 1000, RemainingBytes: 1000, RequestedBytes: 2048}, apiErr.Storage)

	// A scene cap of 0: the commit's plan_limit.
	_, err = c.PutCustomer(ctx, "capped", splathost.CustomerUpdate{MaxSplats: splathost.Value[int64](0)})
	require.NoError(t, err)
	_, err = c.UploadFile(ctx, "capped", writeSplat(t, t.TempDir(), 4), splathost.UploadOptions{})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusForbidden, apiErr.Status)
	require.NotNil(t, apiErr.PlanLimit, "%s", apiErr.Body)
	require.Equal(t, "splatCount", apiErr.PlanLimit.Dimension)
	require.EqualValues(t, 0, *apiErr.PlanLimit.Limit)
	require.Equal(t, "customer", apiErr.PlanLimit.Scope)

	// The free plan cannot clone.
	_, err = c.PutCustomer(ctx, "maker", splathost.CustomerUpdate{})
	require.NoError(t, err)
	src, err := c.UploadFile(ctx, "maker", writeSplat(t, t.TempDir(), 4), splathost.UploadOptions{})
	require.NoError(t, err)
	_, err = c.CloneAndWait(ctx, "maker", src.SplatID, splathost.CloneOptions{})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, "cloning", apiErr.PlanLimit.Dimension)
	require.Nil(t, apiErr.PlanLimit.Limit)

	// Validation problems arrive as issues.
	_, err = c.PatchSplat(ctx, "maker", src.SplatID, splathost.SplatPatch{Title: splathost.Ptr(strings.Repeat("x", 201))})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	require.NotEmpty(t, apiErr.Issues)
}

func TestSDKOperatorRotateAndRevoke(t *testing.T) {
	ctx := context.Background()
	op := operatorSDK(t)
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	acct, err := op.GetAccount(ctx, in.AccountID)
	require.NoError(t, err)
	require.Equal(t, splathost.PlanPro, acct.Plan)
	acct, err = op.UpdateAccount(ctx, acct.ID, splathost.AccountUpdate{Plan: splathost.Ptr(splathost.PlanEnterprise),
		Overage: splathost.Ptr(true), MaxSplats: splathost.Value[int64](10)})
	require.NoError(t, err)
	require.True(t, acct.Overage)
	require.EqualValues(t, 10, *acct.MaxSplats)
	acct, err = op.UpdateAccount(ctx, acct.ID, splathost.AccountUpdate{MaxSplats: splathost.Null[int64]()})
	require.NoError(t, err)
	require.Nil(t, acct.MaxSplats)

	framed, err := op.UpdateIntegration(ctx, in.ID, splathost.IntegrationUpdate{FrameAncestors: &[]string{"https://*.example.com"}})
	require.NoError(t, err)
	require.Equal(t, []string{"https://*.example.com"}, framed.FrameAncestors)
	framed, err = op.UpdateIntegration(ctx, in.ID, splathost.IntegrationUpdate{FrameAncestors: &[]string{}})
	require.NoError(t, err)
	require.Empty(t, framed.FrameAncestors)

	_, err = c.PutCustomer(ctx, "eu", splathost.CustomerUpdate{})
	require.NoError(t, err)
	rotated, err := op.RotateIntegration(ctx, in.ID)
	require.NoError(t, err)
	require.NotEqual(t, in.SecretKey, rotated.SecretKey)
	_, err = c.GetCustomer(ctx, "eu")
	require.True(t, splathost.IsUnauthorized(err), "the old secret stops working: %v", err)
	fresh, err := splathost.New(env.URL, splathost.WithKeys(in.PublicKey, rotated.SecretKey))
	require.NoError(t, err)
	_, err = fresh.GetCustomer(ctx, "eu")
	require.NoError(t, err)

	require.NoError(t, op.RevokeIntegration(ctx, in.ID))
	require.NoError(t, op.RevokeIntegration(ctx, in.ID), "revoking twice is harmless")
	_, err = fresh.GetCustomer(ctx, "eu")
	var apiErr *splathost.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusGone, apiErr.Status)
	got, err := op.GetIntegration(ctx, in.ID)
	require.NoError(t, err)
	require.True(t, got.Revoked)
	require.Empty(t, got.SecretKey, "the secret is never shown again")

	wrong, err := splathost.New(env.URL, splathost.WithAdminToken("not-the-token"))
	require.NoError(t, err)
	_, err = wrong.GetAccount(ctx, in.AccountID)
	require.True(t, splathost.IsUnauthorized(err), "%v", err)
}

// TestSDKAdminCustomerUsage covers the operator's usage route: the same shape as the
// integrator's, 404 for unknown integrations and customers, 401 without the admin token.
func TestSDKAdminCustomerUsage(t *testing.T) {
	ctx := context.Background()
	op := operatorSDK(t)
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	eu := "shop/user 7" // an id that needs escaping in a path
	_, err := c.PutCustomer(ctx, eu, splathost.CustomerUpdate{LimitBytes: splathost.Ptr[int64](10000), MaxSplats: splathost.Value[int64](3)})
	require.NoError(t, err)
	_, err = c.UploadFile(ctx, eu, writeSplat(t, t.TempDir(), 10), splathost.UploadOptions{})
	require.NoError(t, err)

	want, err := c.CustomerUsage(ctx, eu)
	require.NoError(t, err)
	got, err := op.AdminCustomerUsage(ctx, in.ID, eu)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.EqualValues(t, 320, got.Storage.UsedBytes)
	require.EqualValues(t, 1, got.Splats.Used)
	require.EqualValues(t, 3, *got.Splats.Limit)

	_, err = op.AdminCustomerUsage(ctx, in.ID, "nobody")
	require.True(t, splathost.IsNotFound(err), "%v", err)
	_, err = op.AdminCustomerUsage(ctx, "0123456789abcdef01234567", eu)
	require.True(t, splathost.IsNotFound(err), "%v", err)
	_, err = op.AdminCustomerUsage(ctx, "not-an-id", eu)
	require.True(t, splathost.IsNotFound(err), "%v", err)

	path := "/admin/v1/integrations/" + in.ID + "/customers/nobody/usage"
	requireEnvelope(t, do(t, "GET", path, nil, nil), 401)
	requireEnvelope(t, do(t, "GET", path, map[string]string{"Authorization": "Bearer " + in.SecretKey}, nil), 401)
	requireEnvelope(t, do(t, "GET", path, admin(), nil), 404)
}

// TestSDKErrorCodesNameTheCause: the code, through the SDK's typed checks, tells a customer
// never provisioned from a wrong key at the same 401, and names the other causes.
func TestSDKErrorCodesNameTheCause(t *testing.T) {
	ctx := context.Background()
	in, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	upload := splathost.FileUploadRequest{FileName: "a.splat", ContentType: "application/octet-stream", FileSize: 320}

	_, err := c.RequestFileUpload(ctx, "never-provisioned", upload)
	require.True(t, splathost.IsCustomerNotProvisioned(err), "%v", err)
	require.False(t, splathost.IsUnauthorized(err), "the key was right: %v", err)
	require.Equal(t, http.StatusUnauthorized, statusOfErr(t, err))
	_, err = c.GetCustomer(ctx, "never-provisioned")
	require.True(t, splathost.IsCustomerNotProvisioned(err) && splathost.IsNotFound(err), "%v", err)
	_, err = c.MintSession(ctx, splathost.SessionRequest{Type: splathost.SessionEditor, ExternalUserID: "never-provisioned"})
	require.True(t, splathost.IsCustomerNotProvisioned(err), "%v", err)
	require.Equal(t, http.StatusForbidden, statusOfErr(t, err))

	wrong, err := splathost.New(env.URL, splathost.WithKeys(in.PublicKey, "msk_wrong"))
	require.NoError(t, err)
	_, err = wrong.RequestFileUpload(ctx, "never-provisioned", upload)
	require.True(t, splathost.IsUnauthorized(err) && splathost.IsCode(err, splathost.CodeUnauthorized), "%v", err)
	require.False(t, splathost.IsCustomerNotProvisioned(err), "%v", err)

	_, err = c.PutCustomer(ctx, "paused", splathost.CustomerUpdate{Status: "inactive"})
	require.NoError(t, err)
	_, err = c.RequestFileUpload(ctx, "paused", upload)
	require.True(t, splathost.IsCode(err, splathost.CodeCustomerInactive), "%v", err)
	require.Equal(t, http.StatusUnauthorized, statusOfErr(t, err))

	_, err = c.GetSplat(ctx, "", "0123456789abcdef01234567")
	require.True(t, splathost.IsCode(err, splathost.CodeNotFound), "%v", err)
	_, err = c.PatchSplat(ctx, "", "0123456789abcdef01234567", splathost.SplatPatch{})
	require.True(t, splathost.IsCode(err, splathost.CodeValidation), "%v", err)

	require.NoError(t, operatorSDK(t).RevokeIntegration(ctx, in.ID))
	_, err = c.GetCustomer(ctx, "paused")
	require.True(t, splathost.IsRevoked(err), "%v", err)
}

// statusOfErr is the HTTP status of an SDK error.
func statusOfErr(t *testing.T, err error) int {
	t.Helper()
	var e *splathost.APIError
	require.True(t, errors.As(err, &e), "%v", err)
	return e.Status
}

// TestSDKIteratorsFollowEveryPage: AllSplats and AllWebhookDeliveries read several pages of the
// real lists, in the lists' order, and stop fetching when the loop breaks.
func TestSDKIteratorsFollowEveryPage(t *testing.T) {
	ctx := context.Background()
	_, c := sdkTenant(t, splathost.PlanPro, 1<<30)
	rcv := newReceiver(t)
	hook, err := c.CreateWebhook(ctx, splathost.WebhookInput{URL: rcv.srv.URL, Events: []string{"splat.created"}})
	require.NoError(t, err)
	_, err = c.PutCustomer(ctx, "pager", splathost.CustomerUpdate{})
	require.NoError(t, err)
	var uploaded []string
	for i := range 5 {
		res, err := c.UploadFile(ctx, "pager", writeSplat(t, t.TempDir(), 10+i), splathost.UploadOptions{})
		require.NoError(t, err)
		uploaded = append(uploaded, res.SplatID)
	}

	var listed []string
	for s, err := range c.AllSplats(ctx, splathost.ListSplatsOptions{ExternalUserID: "pager", Limit: 2, Sort: "createdAt", Dir: "asc"}) {
		require.NoError(t, err)
		listed = append(listed, s.ID)
	}
	require.Equal(t, uploaded, listed, "three pages of two, in order")
	listed = nil
	for s, err := range c.AllSplats(ctx, splathost.ListSplatsOptions{ExternalUserID: "pager", Limit: 2, Sort: "createdAt", Dir: "desc"}) {
		require.NoError(t, err)
		if listed = append(listed, s.ID); len(listed) == 3 {
			break
		}
	}
	require.Equal(t, []string{uploaded[4], uploaded[3], uploaded[2]}, listed)

	// Each scene's splat.created is one delivery: five, read two a page.
	var deliveries []splathost.WebhookDelivery
	require.Eventually(t, func() bool {
		deliveries = deliveries[:0]
		for d, err := range c.AllWebhookDeliveries(ctx, hook.ID, 2) {
			require.NoError(t, err)
			deliveries = append(deliveries, d)
		}
		return len(deliveries) == len(uploaded)
	}, 30*time.Second, 200*time.Millisecond, "deliveries: %+v", deliveries)
	seen := map[string]bool{}
	for _, d := range deliveries {
		require.Equal(t, "splat.created", d.Type)
		seen[d.ID] = true
	}
	require.Len(t, seen, len(uploaded), "no delivery twice across pages")

	for _, err := range c.AllWebhookDeliveries(ctx, "0123456789abcdef01234567", 2) {
		require.True(t, splathost.IsCode(err, splathost.CodeNotFound), "%v", err)
	}
	var trending []string
	for s, err := range c.AllTrendingSplats(ctx, splathost.TrendingOptions{WindowDays: 7, Limit: 5}) {
		require.NoError(t, err)
		trending = append(trending, s.ID)
	}
	require.Empty(t, trending, "no scene is public yet")
}
