package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"

	"github.com/splathost/splathost/internal/temporalconn"
	"github.com/splathost/splathost/workflows"
)

// workflowTypes maps the --type shorthands to registered workflow type names; any other
// value is taken as a type name as it is.
var workflowTypes = map[string]string{
	"clone":     workflows.CloneSceneWorkflow,
	"retention": workflows.SceneRetentionWorkflow,
	"purge":     "PurgeCustomerAssets",
	// Scene DELETE and refused-commit purges.
	"asset-purge": "PurgeAssets",
	"views":       "DeleteSceneViews",
	"renditions":  workflows.SceneRenditionsWorkflow,
}

// temporal dials the Temporal frontend. The SDK's own logging is discarded: the CLI reports
// what matters itself and keeps stdout parseable.
func (a *app) temporal() (client.Client, error) {
	if a.temporalAddr == "" {
		return nil, errors.New("no Temporal address: pass --temporal, set SPLATHOST_TEMPORAL_ADDR or run `make dev`")
	}
	// A frontend list (a cluster's stack.json) is dialled as the services dial it.
	hostPort, dialOpts := temporalconn.Target(a.temporalAddr)
	return client.Dial(client.Options{HostPort: hostPort, Namespace: a.tempoNS,
		ConnectionOptions: client.ConnectionOptions{DialOptions: dialOpts},
		Logger:            tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
}

// runTemporal adapts a command body that needs a Temporal client to cobra's RunE.
func (a *app) runTemporal(body func(cmd *cobra.Command, args []string, tc client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		tc, err := a.temporal()
		if err != nil {
			return err
		}
		defer tc.Close()
		return body(cmd, args, tc)
	}
}

// workflowRow is one workflow as the CLI prints it.
type workflowRow struct {
	WorkflowID       string         `json:"workflowId"`
	RunID            string         `json:"runId"`
	Type             string         `json:"type"`
	Status           string         `json:"status"`
	StartTime        *time.Time     `json:"startTime,omitempty"`
	CloseTime        *time.Time     `json:"closeTime,omitempty"`
	SearchAttributes map[string]any `json:"searchAttributes,omitempty"`
	Memo             map[string]any `json:"memo,omitempty"`
	// Clone is the job's progress, for clone workflows.
	Clone *cloneProgress `json:"clone,omitempty"`
}

// cloneProgress is what workflows.DescribeClone tells about a clone job, plus its phase.
type cloneProgress struct {
	JobID         string `json:"jobId"`
	Phase         string `json:"phase,omitempty"`
	Running       bool   `json:"running"`
	SourceSplatID string `json:"sourceSplatId"`
	CopiedObjects int    `json:"copiedObjects"`
	TotalObjects  int    `json:"totalObjects"`
	SplatID       string `json:"splatId,omitempty"`
	Error         string `json:"error,omitempty"`
}

func (a *app) workflowsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "workflows", Short: "Find and inspect the Temporal workflows of an integration, a customer or a scene"}
	var filter workflowFilter
	var keys integrationKeys
	var limit int
	types := strings.Join(slices.Sorted(maps.Keys(workflowTypes)), ", ")
	list := &cobra.Command{
		Use:   "list [--integration ID] [--scene SPLAT ID] [--customer EU] [--type TYPE]",
		Short: "List workflows by integration, scene, customer and type, newest first",
		Long: "List workflows by the integrationId, splatId/sourceSplatId, externalUserId and WorkflowType search\n" +
			"attributes, newest first; clone jobs also show their phase and copied/total objects.\n\n" +
			"Give --integration, or --scene (a scene id names one integration's scene), or --customer with the\n" +
			"integration's keys (--public-key and --secret-key, or SPLATHOST_PUBLIC_KEY and SPLATHOST_SECRET_KEY),\n" +
			"from which the integration is found. --type is one of " + types + ",\nor a workflow type name.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The scope is settled before Temporal is dialled: a missing one is a usage error.
			f := filter
			if f.integrationID == "" && f.scene == "" {
				if f.customer == "" {
					return errors.New("workflows list needs --integration, --scene, or --customer with the integration's keys")
				}
				id, err := a.integrationOfKeys(cmd.Context(), keys, f.customer)
				if err != nil {
					return err
				}
				f.integrationID = id
			}
			return a.runTemporal(func(cmd *cobra.Command, _ []string, tc client.Client) error {
				query, local := f.query()
				rows, err := listWorkflows(cmd.Context(), tc, query, local, limit)
				if err != nil {
					return err
				}
				return a.print(rows, func(w *tabwriter.Writer) {
					row(w, "WORKFLOW ID", "RUN ID", "TYPE", "STATUS", "STARTED", "CUSTOMER", "PROGRESS")
					for _, r := range rows {
						progress := ""
						if r.Clone != nil {
							progress = fmt.Sprintf("%s %d/%d", r.Clone.Phase, r.Clone.CopiedObjects, r.Clone.TotalObjects)
						}
						row(w, r.WorkflowID, r.RunID, r.Type, r.Status, timeOf(r.StartTime), r.SearchAttributes["externalUserId"], progress)
					}
				})
			})(cmd, args)
		},
	}
	f := list.Flags()
	f.StringVar(&filter.integrationID, "integration", "", "integration id")
	f.StringVar(&filter.scene, "scene", "", "scene id: the scene's workflows and the clone jobs copying it")
	f.StringVar(&filter.customer, "customer", "", "external user id (with --integration, --scene or the integration's keys)")
	f.StringVar(&filter.typ, "type", "", types+", or a workflow type name")
	f.IntVar(&limit, "limit", 100, "at most this many workflows, newest first")
	keys.addFlags(f)

	describe := &cobra.Command{
		Use:   "describe <workflowId> [runId]",
		Short: "Show a workflow's status, search attributes and memo; progress for clone jobs",
		Args:  cobra.RangeArgs(1, 2),
		RunE: a.runTemporal(func(cmd *cobra.Command, args []string, tc client.Client) error {
			runID := ""
			if len(args) == 2 {
				runID = args[1]
			}
			d, err := tc.DescribeWorkflowExecution(cmd.Context(), args[0], runID)
			if err != nil {
				return err
			}
			r := rowOf(d.GetWorkflowExecutionInfo())
			if err := addCloneProgress(cmd.Context(), tc, &r); err != nil {
				return err
			}
			return a.print(r, func(w *tabwriter.Writer) {
				row(w, "WORKFLOW ID", r.WorkflowID)
				row(w, "RUN ID", r.RunID)
				row(w, "TYPE", r.Type)
				row(w, "STATUS", r.Status)
				row(w, "STARTED", timeOf(r.StartTime))
				row(w, "CLOSED", timeOf(r.CloseTime))
				for _, k := range slices.Sorted(maps.Keys(r.SearchAttributes)) {
					row(w, "SEARCH "+k, r.SearchAttributes[k])
				}
				for _, k := range slices.Sorted(maps.Keys(r.Memo)) {
					row(w, "MEMO "+k, r.Memo[k])
				}
				if c := r.Clone; c != nil {
					row(w, "CLONE PHASE", c.Phase)
					row(w, "CLONE PROGRESS", fmt.Sprintf("%d/%d objects", c.CopiedObjects, c.TotalObjects))
					if c.SplatID != "" {
						row(w, "CLONE RESULT", c.SplatID)
					}
					if c.Error != "" {
						row(w, "CLONE ERROR", c.Error)
					}
				}
			})
		}),
	}
	cmd.AddCommand(list, describe)
	return cmd
}

// workflowFilter is what `workflows list` selects on; empty fields select nothing.
type workflowFilter struct {
	integrationID, customer, scene, typ string
}

// query builds the list filter on the product's search attributes. A scene is matched as the
// scene a workflow works on (splatId) or the one a clone copies (sourceSplatId). A customer id
// holding a backslash matches nothing in the SQL visibility store however it is escaped, so
// such an id is returned as local, to be matched on the listed rows instead.
func (f workflowFilter) query() (query, local string) {
	var q []string
	if f.integrationID != "" {
		q = append(q, "integrationId = "+quote(f.integrationID))
	}
	if f.scene != "" {
		q = append(q, "(splatId = "+quote(f.scene)+" OR sourceSplatId = "+quote(f.scene)+")")
	}
	if strings.Contains(f.customer, `\`) {
		local = f.customer
	} else if f.customer != "" {
		q = append(q, "externalUserId = "+quote(f.customer))
	}
	if typ := f.typ; typ != "" {
		if name, ok := workflowTypes[typ]; ok {
			typ = name
		}
		q = append(q, "WorkflowType = "+quote(typ))
	}
	return strings.Join(q, " AND "), local
}

// integrationOfKeys is the id of the integration whose keys are given, read from its customer
// eu (GET /api/v1/external-user answers the customer with its integrationId).
func (a *app) integrationOfKeys(ctx context.Context, keys integrationKeys, eu string) (string, error) {
	c, err := a.integrationSDK(keys, "workflows list --customer without --integration or --scene")
	if err != nil {
		return "", err
	}
	cu, err := c.GetCustomer(ctx, eu)
	if err != nil {
		return "", fmt.Errorf("finding the integration of customer %q: %w", eu, err)
	}
	return cu.IntegrationID, nil
}

// quote makes a string literal of the visibility query language; an external user id is the
// integrator's opaque text and may hold quotes.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// listWorkflows lists up to limit workflows matching query, newest first; with customer not
// empty only those whose externalUserId is customer.
func listWorkflows(ctx context.Context, tc client.Client, query, customer string, limit int) ([]workflowRow, error) {
	rows := []workflowRow{}
	var token []byte
	for len(rows) < limit {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query,
			PageSize: int32(min(limit-len(rows), 1000)), NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, info := range resp.GetExecutions() {
			r := rowOf(info)
			if customer != "" && r.SearchAttributes["externalUserId"] != customer {
				continue
			}
			if len(rows) == limit {
				break
			}
			if err := addCloneProgress(ctx, tc, &r); err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return rows, nil
}

func rowOf(info *workflowpb.WorkflowExecutionInfo) workflowRow {
	r := workflowRow{WorkflowID: info.GetExecution().GetWorkflowId(), RunID: info.GetExecution().GetRunId(),
		Type: info.GetType().GetName(), Status: info.GetStatus().String(),
		SearchAttributes: decodeFields(info.GetSearchAttributes().GetIndexedFields()),
		Memo:             decodeFields(info.GetMemo().GetFields())}
	if t := info.GetStartTime(); t != nil {
		st := t.AsTime()
		r.StartTime = &st
	}
	if t := info.GetCloseTime(); t != nil {
		ct := t.AsTime()
		r.CloseTime = &ct
	}
	return r
}

// decodeFields decodes payloads with the default converter, which is what the product writes.
func decodeFields(fields map[string]*commonpb.Payload) map[string]any {
	if len(fields) == 0 {
		return nil
	}
	dc := converter.GetDefaultDataConverter()
	out := make(map[string]any, len(fields))
	for k, p := range fields {
		var v any
		if dc.FromPayload(p, &v) == nil {
			out[k] = v
		}
	}
	return out
}

// addCloneProgress fills r.Clone for a clone job from workflows.DescribeClone.
func addCloneProgress(ctx context.Context, tc client.Client, r *workflowRow) error {
	if r.Type != workflows.CloneSceneWorkflow {
		return nil
	}
	st, err := workflows.DescribeClone(ctx, tc, r.WorkflowID, r.RunID)
	if errors.Is(err, workflows.ErrCloneNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c := &cloneProgress{JobID: r.RunID, Running: st.Running, SourceSplatID: st.SourceSplatID,
		CopiedObjects: st.Copied, TotalObjects: st.Total}
	if p, ok := r.Memo["phase"].(string); ok {
		c.Phase = p
	}
	if st.Result != nil {
		c.SplatID = st.Result.SplatID
	}
	if st.Err != nil {
		c.Error = st.Err.Error()
	}
	r.Clone = c
	return nil
}

func timeOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// sweepResult is the run `sweep orphans` started.
type sweepResult struct {
	ScheduleID string    `json:"scheduleId"`
	WorkflowID string    `json:"workflowId"`
	RunID      string    `json:"runId"`
	StartedAt  time.Time `json:"startedAt"`
}

func (a *app) sweepCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "sweep", Short: "Run maintenance schedules now"}
	orphans := &cobra.Command{
		Use:   "orphans",
		Short: "Trigger the orphan-upload sweep schedule now and print the run it started",
		Args:  cobra.NoArgs,
		RunE: a.runTemporal(func(cmd *cobra.Command, _ []string, tc client.Client) error {
			res, err := triggerSchedule(cmd.Context(), tc, workflows.OrphanSweepScheduleID)
			if err != nil {
				return err
			}
			return a.printDone(res, fmt.Sprintf("started orphan sweep run %s (workflow %s)", res.RunID, res.WorkflowID), func(w *tabwriter.Writer) {
				row(w, "SCHEDULE", "WORKFLOW ID", "RUN ID", "STARTED")
				row(w, res.ScheduleID, res.WorkflowID, res.RunID, res.StartedAt.UTC().Format(time.RFC3339))
			})
		}),
	}
	cmd.AddCommand(orphans)
	return cmd
}

// triggerSchedule starts a schedule's action now and finds the run it started: the recent
// action that was not there before the trigger. Overlap ALLOW_ALL, because the schedule's own
// SKIP would silently drop an operator's request while a scheduled run is going.
func triggerSchedule(ctx context.Context, tc client.Client, id string) (*sweepResult, error) {
	h := tc.ScheduleClient().GetHandle(ctx, id)
	before, err := h.Describe(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, act := range before.Info.RecentActions {
		if act.StartWorkflowResult != nil {
			seen[act.StartWorkflowResult.WorkflowID] = true
		}
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		d, err := h.Describe(ctx)
		if err != nil {
			return nil, err
		}
		for _, act := range d.Info.RecentActions {
			if r := act.StartWorkflowResult; r != nil && !seen[r.WorkflowID] {
				return &sweepResult{ScheduleID: id, WorkflowID: r.WorkflowID, RunID: r.FirstExecutionRunID, StartedAt: act.ActualTime}, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("schedule %s was triggered but no new run showed within 30s", id)
}
