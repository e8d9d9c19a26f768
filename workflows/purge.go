package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/splathost/splathost/activities"
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
	PurgeID              string
	IntegrationID        string
	ExternalUserRecordID string
	ExternalUserID       string
	Offset               int
	Deleted              int
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
func PurgeWorkflowID(integrationID, externalUserRecordID string) string {
	return "purge-customer/" + integrationID + "/" + externalUserRecordID
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
		ID:                    PurgeWorkflowID(in.IntegrationID, in.ExternalUserRecordID),
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
	NonRetryableErrorTypes: []string{activities.ErrBadInput},
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
	if in.PurgeID == "" || in.IntegrationID == "" || in.ExternalUserRecordID == "" {
		return PurgeResult{}, temporal.NewNonRetryableApplicationError("purge id, integration id and external user record id are required", activities.ErrBadInput, nil)
	}
	var a *activities.Activities
	dbCtx := workflow.WithActivityOptions(ctx, dbOptions)
	delCtx := workflow.WithActivityOptions(ctx, deleteOptions)
	for {
		var slice activities.LoadPurgeResult
		err := workflow.ExecuteActivity(dbCtx, a.LoadPurge, activities.LoadPurgeInput{PurgeID: in.PurgeID, Offset: in.Offset, Limit: purgeSlice}).Get(ctx, &slice)
		if err != nil {
			return closeFailed(dbCtx, in, err)
		}
		if slice.Closed {
			return PurgeResult{Deleted: in.Deleted, AlreadyClosed: true}, nil
		}
		if len(slice.Keys)+len(slice.Prefixes) > 0 {
			var res activities.DeleteObjectsResult
			err := workflow.ExecuteActivity(delCtx, a.DeleteObjects, activities.DeleteObjectsInput{Keys: slice.Keys, Prefixes: slice.Prefixes}).Get(ctx, &res)
			if err != nil {
				return closeFailed(dbCtx, in, err)
			}
			in.Deleted += res.Deleted
		}
		in.Offset = slice.Next
		if slice.Last {
			break
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return PurgeResult{}, workflow.NewContinueAsNewError(ctx, PurgeCustomerAssets, in)
		}
	}
	if err := workflow.ExecuteActivity(dbCtx, a.ClosePurge, activities.ClosePurgeInput{PurgeID: in.PurgeID, Deleted: in.Deleted}).Get(ctx, nil); err != nil {
		return PurgeResult{}, err
	}
	return PurgeResult{Deleted: in.Deleted}, nil
}

// closeFailed handles an activity error. The activities retry forever, so an error that reaches
// the workflow is bad input (or a cancellation): bad input closes the row with the failure.
func closeFailed(ctx workflow.Context, in PurgeInput, err error) (PurgeResult, error) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrBadInput {
		return PurgeResult{}, err
	}
	msg := app.Error()
	if cerr := workflow.ExecuteActivity(ctx, (*activities.Activities)(nil).ClosePurge,
		activities.ClosePurgeInput{PurgeID: in.PurgeID, Deleted: in.Deleted, Failure: msg}).Get(ctx, nil); cerr != nil {
		return PurgeResult{}, cerr
	}
	return PurgeResult{Deleted: in.Deleted, Failure: msg}, err
}
