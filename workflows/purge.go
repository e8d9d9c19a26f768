package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/workflows/contract"
)

// Search attributes the workflows set, so operators can find a customer's workflows in the UI.
// They must be registered as Keyword on the namespace (tools/stack does it for make dev and the
// tests): a start that names an unregistered attribute is refused.
var (
	// SAIntegrationID is the integration the workflow works for.
	SAIntegrationID = temporal.NewSearchAttributeKeyKeyword("integrationId")
	// SAExternalUserID is the integrator's own customer id (the EU header).
	SAExternalUserID = temporal.NewSearchAttributeKeyKeyword("externalUserId")
)

// purgeSlice is how many keys and prefixes one DeleteObjects call gets: one S3 DeleteObjects
// request's worth of keys, and a payload of about 100 KB.
const purgeSlice = 1000

// PurgeInput names the outbox row (asset_purges) of a customer deletion and the customer. Offset
// and Deleted carry progress across continue-as-new; a new purge starts them at zero.
type PurgeInput struct {
	PurgeID       string
	IntegrationID string
	// OwnerID is the customer's record id (scenes.owner_id); its JSON key is its old
	// name, so recorded histories replay.
	OwnerID        string `json:"ExternalUserRecordID"`
	ExternalUserID string
	Offset         int
	Deleted        int
}

// PurgeResult counts the objects the purge removed (including those already gone).
// AlreadyClosed says another run had finished the purge.
type PurgeResult struct {
	Deleted       int
	AlreadyClosed bool
	Failure       string
}

// PurgeWorkflowID is the business key of a customer's purge. A second deletion of the same
// customer (provisioned again in between) reuses it: it starts once the first has closed.
func PurgeWorkflowID(integrationID, ownerID string) string {
	return "purge-customer/" + integrationID + "/" + ownerID
}

// purgeSearchAttributes are set when a purge starts, by the service or by the re-drive.
func purgeSearchAttributes(in PurgeInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(SAIntegrationID.ValueSet(in.IntegrationID), SAExternalUserID.ValueSet(in.ExternalUserID))
}

// StartPurge starts a customer's PurgeCustomerAssets workflow. While a purge of the same
// customer runs, it returns that run instead (no error); if that run is for an older outbox
// row, the re-drive starts this one after it closes.
func StartPurge(ctx context.Context, c client.Client, taskQueue string, in PurgeInput) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    PurgeWorkflowID(in.IntegrationID, in.OwnerID),
		TaskQueue:             taskQueue,
		TypedSearchAttributes: purgeSearchAttributes(in),
	}, PurgeCustomerAssets, in)
}

// retryForever retries an activity until it succeeds, backing off to one attempt every five
// minutes: a purge must finish however long the store is unavailable.
var retryForever = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        5 * time.Minute,
	MaximumAttempts:        0,
	NonRetryableErrorTypes: []string{contract.ErrBadInput},
}

// deleteOptions run DeleteObjects: it heartbeats after every batch, so a lost worker is noticed
// within a minute and the next attempt resumes from the last heartbeat.
var deleteOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Hour,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         retryForever,
}

// dbOptions run the short Postgres activities.
var dbOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         retryForever,
}

// PurgeCustomerAssets removes every stored object of a deleted customer's scenes, as recorded
// in its outbox row, and then closes the row. The work is fetched and deleted a slice at a time;
// the workflow continues as new when its history grows long. Input the activities can never
// process closes the row with the failure (the re-drive must not restart it forever) and fails
// the workflow, so an operator sees it.
func PurgeCustomerAssets(ctx workflow.Context, in PurgeInput) (PurgeResult, error) {
	if in.PurgeID == "" || in.IntegrationID == "" || in.OwnerID == "" {
		return PurgeResult{}, temporal.NewNonRetryableApplicationError("purge id, integration id and external user record id are required", contract.ErrBadInput, nil)
	}
	again := func() error { return workflow.NewContinueAsNewError(ctx, PurgeCustomerAssets, in) }
	if end, res, err := purgeSlices(ctx, in.PurgeID, &in.Offset, &in.Deleted, again); end {
		return res, err
	}
	return closePurge(workflow.WithActivityOptions(ctx, dbOptions), in.PurgeID, in.Deleted)
}

// purgeSlices runs deleteSlices for a purge workflow and says whether the workflow ends there,
// and with what: a failure closes the row (closeFailed), a row another run closed answers
// AlreadyClosed, and a history grown long continues as new (again, called once the progress
// is in the input). It does not end once every object is gone: the caller finishes the row.
func purgeSlices(ctx workflow.Context, purgeID string, offset, deleted *int, again func() error) (bool, PurgeResult, error) {
	closed, more, err := deleteSlices(ctx, purgeID, offset, deleted)
	switch {
	case err != nil:
		res, err := closeFailed(workflow.WithActivityOptions(ctx, dbOptions), purgeID, *deleted, err)
		return true, res, err
	case closed:
		return true, PurgeResult{Deleted: *deleted, AlreadyClosed: true}, nil
	case more:
		return true, PurgeResult{}, again()
	}
	return false, PurgeResult{}, nil
}

// deleteSlices deletes a row's objects a slice at a time from *offset on, adding what it
// removed to *deleted. closed says another run had already closed the row; more says the
// history grew long and the caller must continue as new (with *offset and *deleted). The
// commands it issues are those PurgeCustomerAssets always issued, so running purges replay.
func deleteSlices(ctx workflow.Context, purgeID string, offset, deleted *int) (closed, more bool, err error) {
	dbCtx := workflow.WithActivityOptions(ctx, dbOptions)
	delCtx := workflow.WithActivityOptions(ctx, deleteOptions)
	for {
		var slice contract.LoadPurgeResult
		err := workflow.ExecuteActivity(dbCtx, contract.LoadPurge, contract.LoadPurgeInput{PurgeID: purgeID, Offset: *offset, Limit: purgeSlice}).Get(ctx, &slice)
		if err != nil {
			return false, false, err
		}
		if slice.Closed {
			return true, false, nil
		}
		if len(slice.Keys)+len(slice.Prefixes) > 0 {
			var res contract.DeleteObjectsResult
			err := workflow.ExecuteActivity(delCtx, contract.DeleteObjects, contract.DeleteObjectsInput{Keys: slice.Keys, Prefixes: slice.Prefixes}).Get(ctx, &res)
			if err != nil {
				return false, false, err
			}
			*deleted += res.Deleted
		}
		*offset = slice.Next
		if slice.Last {
			return false, false, nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return false, true, nil
		}
	}
}

// closePurge closes the row once every object is gone.
func closePurge(ctx workflow.Context, purgeID string, deleted int) (PurgeResult, error) {
	err := workflow.ExecuteActivity(ctx, contract.ClosePurge,
		contract.ClosePurgeInput{PurgeID: purgeID, Deleted: deleted}).Get(ctx, nil)
	if err != nil {
		return PurgeResult{}, err
	}
	return PurgeResult{Deleted: deleted}, nil
}

// closeFailed handles an activity error. The activities retry forever, so an error that reaches
// the workflow is bad input (or a cancellation): bad input closes the row with the failure.
func closeFailed(ctx workflow.Context, purgeID string, deleted int, err error) (PurgeResult, error) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != contract.ErrBadInput {
		return PurgeResult{}, err
	}
	msg := app.Error()
	if cerr := workflow.ExecuteActivity(ctx, contract.ClosePurge,
		contract.ClosePurgeInput{PurgeID: purgeID, Deleted: deleted, Failure: msg}).Get(ctx, nil); cerr != nil {
		return PurgeResult{}, cerr
	}
	return PurgeResult{Deleted: deleted, Failure: msg}, err
}
