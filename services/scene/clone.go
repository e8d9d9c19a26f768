package scene

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.temporal.io/sdk/client"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/externaluser"
	"github.com/splathost/splathost/internal/apperr"
	"github.com/splathost/splathost/internal/httpx"
	"github.com/splathost/splathost/internal/idempotency"
	"github.com/splathost/splathost/internal/ids"
	"github.com/splathost/splathost/workflows"
	"github.com/splathost/splathost/workflows/contract"
)

// Clones is how the scene service runs clone jobs: on Temporal, on the worker's task queue.
type Clones struct {
	Client    client.Client
	TaskQueue string
	// Wait is the POST's time budget: a job done by then answers 201, otherwise 202.
	Wait time.Duration
	// AbandonAfter and Concurrency are passed to each job (see workflows.CloneInput).
	AbandonAfter time.Duration
	Concurrency  int
	// MediaTaskQueue is where renditions run (the media worker's queue); uploads below
	// RenditionMinBytes get none (config.Config.RenditionMinBytes).
	MediaTaskQueue    string
	RenditionMinBytes int64
}

// jobIDPattern is the shape of a job id (a Temporal run id, a UUID); anything else names no job.
var jobIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// errJobNotFound answers a poll of a job that is not this customer's (or not this scene's).
func errJobNotFound() error { return apperr.NotFound("clone job not found") }

// cloner returns the caller's customer after the checks every clone call shares: the plan
// includes cloning (403 plan_limit 'cloning'), the customer is provisioned (404).
func (s *Service) cloner(ctx context.Context, caller *httpx.Caller, eu string) (*ent.ExternalUser, error) {
	if s.clones.Client == nil {
		return nil, apperr.Internal(errors.New("clone jobs are not configured"))
	}
	if err := s.scenes.CheckCloner(ctx, caller.AccountID); err != nil {
		return nil, err
	}
	owner, err := s.customer(ctx, caller, eu)
	if err != nil {
		return nil, err
	}
	if owner == nil || owner.Status == externaluser.StatusDeleted {
		return nil, apperr.CustomerNotProvisioned(http.StatusNotFound)
	}
	return owner, nil
}

// clone answers POST /api/v1/splats/{id}/clone: it checks the request, starts the job and waits
// for it up to the time budget — 201 with the result when it is done, 202 with the job to poll
// otherwise; a job that failed within the budget answers its error.
func (s *Service) clone(c *fiber.Ctx) error {
	call, err := s.customerOnScene(c, (*Service).cloner)
	if err != nil {
		return err
	}
	ctx, caller, eu, id, owner := c.UserContext(), call.caller, call.eu, call.id, call.owner
	if owner.Status != externaluser.StatusActive {
		return errCustomerInactive
	}
	// The job checks again when it reserves; checking here answers 404 and 403 without a job.
	if _, err := s.scenes.CloneSource(ctx, caller.IntegrationID, owner.ID, id); err != nil {
		return err
	}
	wfID := workflows.CloneWorkflowID(caller.IntegrationID, owner.ID)
	jobID, err := s.startClone(ctx, wfID, workflows.CloneInput{
		SplatID: ids.New(), SourceSplatID: id, IntegrationID: caller.IntegrationID, AccountID: caller.AccountID,
		OwnerID: owner.ID, ExternalUserID: eu, ClonedAt: s.now(),
		AbandonAfter: s.clones.AbandonAfter, Concurrency: s.clones.Concurrency, MediaTaskQueue: s.clones.MediaTaskQueue,
	})
	if err != nil {
		return err
	}
	st, err := s.awaitClone(ctx, wfID, jobID, waitBudget(c.Get("Prefer"), s.clones.Wait))
	if err != nil {
		return err
	}
	if st.Running {
		return s.sendRecorded(c, fiber.StatusAccepted, fiber.Map{"status": "accepted", "jobId": jobID, "sourceSplatId": id,
			"copiedObjects": st.Copied, "totalObjects": st.Total})
	}
	return s.cloneDone(c, caller, eu, st, fiber.StatusCreated)
}

// awaitClone waits up to d for clone job jobID of workflow wfID to close, within the request's
// own budget (httpx.Deadline) less what reading the job's state takes, and returns its state.
func (s *Service) awaitClone(ctx context.Context, wfID, jobID string, d time.Duration) (*workflows.CloneState, error) {
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline)-cloneDescribeReserve)
	}
	if d > 0 {
		wait, cancel := context.WithTimeout(ctx, d)
		workflows.WaitClone(wait, s.clones.Client, wfID, jobID)
		cancel()
	}
	st, err := workflows.DescribeClone(ctx, s.clones.Client, wfID, jobID)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	return st, nil
}

// startClone starts the clone job of in, or, for a keyed request, finds the one its first
// attempt started: the job's scene id is then the key's idempotency.StableID, so a retry after
// the process that started it died answers for that job instead of cloning twice. A job of the
// same customer still running is the spec's 429 CLONE_IN_PROGRESS.
func (s *Service) startClone(ctx context.Context, wfID string, in workflows.CloneInput) (string, error) {
	runID, err := s.startOrFindClone(ctx, wfID, in)
	var busy *workflows.CloneInProgress
	if errors.As(err, &busy) {
		return "", apperr.New(http.StatusTooManyRequests, "a clone is already in progress for this external user").
			With("code", "CLONE_IN_PROGRESS").With("jobId", busy.JobID).With("sourceSplatId", busy.SourceSplatID)
	}
	if err != nil {
		return "", apperr.Internal(err)
	}
	return runID, nil
}

// startOrFindClone is startClone's start, or for a keyed request its find.
func (s *Service) startOrFindClone(ctx context.Context, wfID string, in workflows.CloneInput) (string, error) {
	if stable, ok := idempotency.StableID(ctx); ok {
		in.SplatID = stable
		runID, err := workflows.CloneRunOf(ctx, s.clones.Client, wfID, stable)
		if err == nil {
			return runID, nil
		}
		if !errors.Is(err, workflows.ErrCloneNotFound) {
			return "", err
		}
	}
	return workflows.StartClone(ctx, s.clones.Client, s.clones.TaskQueue, in)
}

// sendRecorded answers v with status, recorded for a keyed request (the clone's effect is a
// workflow, not a transaction: its answer is recorded once known, so a retry after the gateway
// died replays it).
func (s *Service) sendRecorded(c *fiber.Ctx, status int, v any) error {
	out, err := idempotency.Record(c.UserContext(), s.db.Ent, status, v)
	if err != nil {
		return err
	}
	return httpx.SendRecorded(c, out)
}

// cloneDescribeReserve is the part of a clone request's budget kept for reading the job's
// state after the wait.
const cloneDescribeReserve = 2 * time.Second

// waitBudget is how long a clone request waits: the configured budget, shortened by the
// client's RFC 7240 preference — "Prefer: respond-async" answers 202 at once, "Prefer: wait=N"
// waits at most N seconds. A longer wait than the budget is never granted.
func waitBudget(prefer string, budget time.Duration) time.Duration {
	for _, p := range strings.Split(prefer, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "respond-async" {
			return 0
		}
		if v, ok := strings.CutPrefix(p, "wait="); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				budget = min(budget, time.Duration(n)*time.Second)
			}
		}
	}
	return budget
}

// pollClone answers GET /api/v1/splats/{id}/clone/{jobId}: running progress, then exactly the
// 201 payload, or the job's error. Every poll keeps the job from being abandoned.
func (s *Service) pollClone(c *fiber.Ctx) error {
	caller, eu, id, err := customerScene(c)
	if err != nil {
		return err
	}
	jobID := strings.ToLower(c.Params("jobId"))
	if !jobIDPattern.MatchString(jobID) {
		return errJobNotFound()
	}
	ctx := c.UserContext()
	owner, err := s.cloner(ctx, caller, eu)
	if err != nil {
		return err
	}
	// The workflow id comes from the caller's own key: another customer's job id names nothing.
	wfID := workflows.CloneWorkflowID(caller.IntegrationID, owner.ID)
	st, err := workflows.DescribeClone(ctx, s.clones.Client, wfID, jobID)
	if errors.Is(err, workflows.ErrCloneNotFound) {
		return errJobNotFound()
	}
	if err != nil {
		return apperr.Internal(err)
	}
	if st.SourceSplatID != id {
		return errJobNotFound()
	}
	if st.Running {
		if err := workflows.PollClone(ctx, s.clones.Client, wfID, jobID); err != nil {
			return apperr.Internal(err)
		}
		return c.JSON(fiber.Map{"status": "running", "jobId": jobID, "copiedObjects": st.Copied, "totalObjects": st.Total})
	}
	return s.cloneDone(c, caller, eu, st, fiber.StatusOK)
}

// cloneDone answers a closed job: the 201 payload (with status for a poll), or the error the
// job failed with — its client envelope, or a 500 for anything else (every failure was rolled
// back).
func (s *Service) cloneDone(c *fiber.Ctx, caller *httpx.Caller, eu string, st *workflows.CloneState, status int) error {
	if st.Err != nil {
		if e := contract.ClientErrorOf(st.Err); e != nil {
			return &apperr.Error{Status: e.Status, Message: e.Message, Issues: e.Issues, Extra: e.Extra}
		}
		return apperr.Internal(st.Err)
	}
	sc, err := s.sceneByID(c.UserContext(), st.Result.SplatID)
	if err != nil {
		return apperr.Internal(err)
	}
	// The clone may have been deleted (or archived) since the job finished.
	if sc == nil || sc.IntegrationID != caller.IntegrationID || sc.ArchivedAt != nil {
		return errSceneNotFound()
	}
	return s.sendRecorded(c, status, fiber.Map{"status": "success", "splat": s.itemOf(sc, ownerEUOf(sc), caller.ProductSlug, eu),
		"splatId": st.Result.SplatID, "sourceSplatId": st.Result.SourceSplatID, "usage": st.Result.Usage})
}
