package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

// webhookAction is the --json answer of the webhook commands the API answers without a body.
type webhookAction struct {
	WebhookID   string `json:"webhookId"`
	DeliveryID  string `json:"deliveryId,omitempty"`
	Deleted     bool   `json:"deleted,omitempty"`
	Redelivered bool   `json:"redelivered,omitempty"`
}

// webhooksCommand manages an integration's webhook endpoints with its keys (like upload): list,
// create, rotate, delete, and the delivery log with redelivery.
func (a *app) webhooksCommand() *cobra.Command {
	var keys integrationKeys
	cmd := &cobra.Command{Use: "webhooks", Short: "Manage an integration's webhook endpoints and their deliveries (integrator keys)"}
	keys.addFlags(cmd.PersistentFlags())
	client := func() (*splathost.Client, error) { return a.integrationSDK(keys, "webhooks") }
	printHooks := func(hooks []splathost.Webhook, done string) error {
		return a.printDone(hooks, done, func(w *tabwriter.Writer) {
			row(w, "ID", "URL", "EVENTS", "SECRET", "CREATED")
			for _, h := range hooks {
				row(w, h.ID, h.URL, strings.Join(h.Events, ","), orDash(&h.Secret), h.CreatedAt)
			}
		})
	}
	list := &cobra.Command{Use: "list", Short: "List the endpoints", Args: cobra.NoArgs,
		RunE: a.runWith(client, func(cmd *cobra.Command, _ []string, c *splathost.Client) error {
			hooks, err := c.ListWebhooks(cmd.Context())
			if err != nil {
				return err
			}
			return printHooks(hooks, "")
		})}
	var in splathost.WebhookInput
	create := &cobra.Command{Use: "create <url>", Short: "Register an endpoint (its secret is shown once)", Args: cobra.ExactArgs(1),
		RunE: a.runWith(client, func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			in.URL = args[0]
			h, err := c.CreateWebhook(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printHooks([]splathost.Webhook{*h}, fmt.Sprintf("created webhook %s for %s; its secret is shown only now", h.ID, h.URL))
		})}
	create.Flags().StringSliceVar(&in.Events, "events", nil, "event types (default: every type)")
	create.Flags().StringVar(&in.Description, "description", "", "a note for yourself")
	rotate := &cobra.Command{Use: "rotate <webhookId>", Short: "Issue a new secret (the old one signs too for 24 h)", Args: cobra.ExactArgs(1),
		RunE: a.runWith(client, func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			h, err := c.RotateWebhook(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printHooks([]splathost.Webhook{*h}, fmt.Sprintf("rotated the secret of webhook %s; the old one signs too for 24 h", h.ID))
		})}
	remove := &cobra.Command{Use: "delete <webhookId>", Short: "Delete an endpoint", Args: cobra.ExactArgs(1),
		RunE: a.runWith(client, func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			if err := c.DeleteWebhook(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.printDone(webhookAction{WebhookID: args[0], Deleted: true}, "deleted webhook "+args[0], nil)
		})}
	var limit int
	var cursor string
	deliveries := &cobra.Command{Use: "deliveries <webhookId>", Short: "Show an endpoint's delivery log, newest first", Args: cobra.ExactArgs(1),
		RunE: a.runWith(client, func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			page, err := c.WebhookDeliveryLog(cmd.Context(), args[0], limit, cursor)
			if err != nil {
				return err
			}
			return a.print(page, func(w *tabwriter.Writer) {
				row(w, "DELIVERY", "TYPE", "STATE", "ATTEMPTS", "LAST STATUS", "NEXT ATTEMPT", "LAST ERROR", "CREATED")
				for _, d := range page.Deliveries {
					var status any = "-"
					if d.LastStatusCode != nil {
						status = *d.LastStatusCode
					}
					row(w, d.ID, d.Type, d.State, d.Attempts, status, orDash(d.NextAttemptAt), orDash(d.LastError), d.CreatedAt)
				}
				if page.NextCursor != nil {
					row(w, "next page: --cursor "+*page.NextCursor)
				}
			})
		})}
	deliveries.Flags().IntVar(&limit, "limit", 20, "rows per page (1-100)")
	deliveries.Flags().StringVar(&cursor, "cursor", "", "the previous page's next cursor")
	redeliver := &cobra.Command{Use: "redeliver <webhookId> <deliveryId>", Short: "Send a delivery again now", Args: cobra.ExactArgs(2),
		RunE: a.runWith(client, func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			if err := c.RedeliverWebhook(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return a.printDone(webhookAction{WebhookID: args[0], DeliveryID: args[1], Redelivered: true},
				fmt.Sprintf("redelivered delivery %s of webhook %s; its attempt shows in `webhooks deliveries %s`", args[1], args[0], args[0]), nil)
		})}
	cmd.AddCommand(list, create, rotate, remove, deliveries, redeliver)
	return cmd
}
