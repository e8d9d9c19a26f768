package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

func (a *app) integrationsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "integrations", Short: "Create integrations, rotate and revoke their keys"}
	var accountID, slug string
	var caps, frames []string
	var rest bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an integration; its secret key is shown only now",
		Args:  cobra.NoArgs,
		RunE: a.runSDK(func(cmd *cobra.Command, _ []string, c *splathost.Client) error {
			in, err := c.CreateIntegration(cmd.Context(), splathost.NewIntegration{AccountID: accountID, ProductSlug: slug,
				Capabilities: caps, RestAccess: &rest, FrameAncestors: frames})
			return a.printIntegration(in, err, "created integration %[1]s for %[2]s in account %[3]s; its secret key is shown only now")
		}),
	}
	f := create.Flags()
	f.StringVar(&accountID, "account", "", "account id (required)")
	f.StringVar(&slug, "product-slug", "", "the integration's site domain (required)")
	f.StringSliceVar(&caps, "capabilities", []string{"viewer", "editor"}, "viewer and/or editor")
	f.BoolVar(&rest, "rest-access", true, "allow the REST API")
	f.StringSliceVar(&frames, "frame-ancestors", nil, "origins allowed to frame the embeds (default any)")
	_ = create.MarkFlagRequired("account")
	_ = create.MarkFlagRequired("product-slug")

	get := a.byID("get <integrationId>", "Show an integration (without its secret)", func(cmd *cobra.Command, c *splathost.Client, id string) error {
		in, err := c.GetIntegration(cmd.Context(), id)
		return a.printIntegration(in, err, "")
	})
	rotate := a.byID("rotate <integrationId>", "Issue a new secret key; the old one stops working at once", func(cmd *cobra.Command, c *splathost.Client, id string) error {
		in, err := c.RotateIntegration(cmd.Context(), id)
		return a.printIntegration(in, err, "rotated the secret key of integration %[1]s (%[2]s); the old one answers 401 from now on")
	})
	revoke := a.byID("revoke <integrationId>", "Revoke an integration for good: its keys answer 410", func(cmd *cobra.Command, c *splathost.Client, id string) error {
		if err := c.RevokeIntegration(cmd.Context(), id); err != nil {
			return err
		}
		in, err := c.GetIntegration(cmd.Context(), id)
		return a.printIntegration(in, err, "revoked integration %[1]s (%[2]s); its keys answer 410 from now on")
	})
	cmd.AddCommand(create, get, rotate, revoke)
	return cmd
}

// printIntegration prints in, the answer of an SDK call, or returns the call's err; done, when
// not empty, says what the call did: a format with indexed verbs, given the integration's id, product
// slug and account.
func (a *app) printIntegration(in *splathost.Integration, err error, done string) error {
	if err != nil {
		return err
	}
	if done != "" {
		// Indexed verbs, so a format that leaves the account out is no misuse.
		done = fmt.Sprintf(done, in.ID, in.ProductSlug, in.AccountID)
	}
	return a.printDone(in, done, func(w *tabwriter.Writer) {
		row(w, "ID", "ACCOUNT", "PRODUCT", "CAPABILITIES", "REST", "PUBLIC KEY", "REVOKED")
		row(w, in.ID, in.AccountID, in.ProductSlug, strings.Join(in.Capabilities, ","), in.RestAccess, in.PublicKey, in.Revoked)
		if in.SecretKey != "" {
			row(w)
			row(w, "SECRET KEY (shown once)", in.SecretKey)
		}
	})
}

func (a *app) customersCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "customers", Short: "Inspect an integration's customers"}
	usage := &cobra.Command{
		Use:   "usage <integrationId> <externalUserId>",
		Short: "Show a customer's storage and scene count",
		Args:  cobra.ExactArgs(2),
		RunE: a.runSDK(func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			u, err := c.AdminCustomerUsage(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return a.print(u, func(w *tabwriter.Writer) {
				row(w, "USED", "LIMIT", "REMAINING", "PERCENT", "SPLATS", "MAX SPLATS")
				row(w, a.size(u.Storage.UsedBytes), a.size(u.Storage.LimitBytes), a.size(u.Storage.RemainingBytes), u.Storage.PercentUsed, u.Splats.Used, orNone(u.Splats.Limit))
			})
		}),
	}
	cmd.AddCommand(usage)
	return cmd
}
