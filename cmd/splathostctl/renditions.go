package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

// renditionsCommand lists scenes by rendition state and retries renditions. Each row names the
// rendition's workflow, which the Temporal UI (or `splathostctl workflows list --type renditions`)
// shows with its phase.
func (a *app) renditionsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "renditions", Short: "List scenes by rendition state; retry a scene's rendition"}
	var f splathost.RenditionFilter
	list := &cobra.Command{
		Use:   "list",
		Short: "List the newest scenes whose rendition is in a state (default failed)",
		Args:  cobra.NoArgs,
		RunE: a.runSDK(func(cmd *cobra.Command, _ []string, c *splathost.Client) error {
			rows, err := c.ListRenditions(cmd.Context(), f)
			if err != nil {
				return err
			}
			return a.print(rows, func(w *tabwriter.Writer) {
				row(w, "SPLAT", "INTEGRATION", "CUSTOMER", "STATE", "TYPE", "GAUSSIANS", "UPLOAD SIZE", "RENDITION SIZE", "MESSAGE")
				for _, r := range rows {
					row(w, r.SplatID, r.IntegrationID, r.ExternalUserID, r.State, orDash(r.RenditionType), orDashInt(r.Gaussians),
						a.size(r.FileSizeBytes), a.orDashSize(r.RenditionBytes), orDash(r.Message))
				}
			})
		}),
	}
	fl := list.Flags()
	fl.StringVar(&f.State, "state", "failed", "pending, ready, failed or skipped")
	fl.StringVar(&f.IntegrationID, "integration", "", "only this integration's scenes")
	fl.IntVar(&f.Limit, "limit", 50, "at most this many (1-200)")
	retry := a.byID("retry <splatId>", "Build a scene's rendition again (it is pending until the new run ends)",
		func(cmd *cobra.Command, c *splathost.Client, id string) error {
			r, err := c.RetryRendition(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.printDone(r, fmt.Sprintf("queued the rendition of scene %s again: workflow %s", r.SplatID, r.WorkflowID), func(w *tabwriter.Writer) {
				row(w, "SPLAT", "STATE", "WORKFLOW")
				row(w, r.SplatID, r.State, r.WorkflowID)
			})
		})
	cmd.AddCommand(list, retry)
	return cmd
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func orDashInt(n *int64) any {
	if n == nil {
		return "-"
	}
	return *n
}

// orDashSize is a.size of an optional byte count, "-" when absent.
func (a *app) orDashSize(n *int64) string {
	if n == nil {
		return "-"
	}
	return a.size(*n)
}
