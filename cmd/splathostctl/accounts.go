package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

// accountFlags are the account fields as flags; create and update share them.
type accountFlags struct {
	name, plan, bundle, maxSplats string
	overage                       bool
}

// register adds the flags; on create the name and bundle are required and the plan and cap
// have defaults, on update an absent flag leaves the field as it is.
func (af *accountFlags) register(cmd *cobra.Command, create bool) {
	f := cmd.Flags()
	plan, maxSplats := "", ""
	if create {
		plan, maxSplats = "pro", "none"
	}
	f.StringVar(&af.name, "name", "", "account name")
	f.StringVar(&af.plan, "plan", plan, "plan: free, pro or enterprise")
	f.StringVar(&af.bundle, "storage-bundle", "", "storage bundle, in bytes or with a unit (10GiB)")
	f.StringVar(&af.maxSplats, "max-splats", maxSplats, "account-wide scene cap, or none")
	f.BoolVar(&af.overage, "overage", false, "allow pay-as-you-go overage (enterprise only)")
	if create {
		_ = cmd.MarkFlagRequired("name")
		_ = cmd.MarkFlagRequired("storage-bundle")
	}
}

// update is the AccountUpdate of the flags the operator gave.
func (af *accountFlags) update(cmd *cobra.Command) (splathost.AccountUpdate, error) {
	var u splathost.AccountUpdate
	fl := cmd.Flags()
	if fl.Changed("name") {
		u.Name = &af.name
	}
	if fl.Changed("plan") {
		u.Plan = splathost.Ptr(splathost.Plan(af.plan))
	}
	if fl.Changed("storage-bundle") {
		n, err := parseBytes(af.bundle)
		if err != nil {
			return u, fmt.Errorf("--storage-bundle: %w", err)
		}
		u.StorageBundleBytes = &n
	}
	// Create gives max-splats a default ("none"), which counts as given.
	if fl.Changed("max-splats") || fl.Lookup("max-splats").DefValue != "" {
		n, err := parseCap(af.maxSplats)
		if err != nil {
			return u, fmt.Errorf("--max-splats: %w", err)
		}
		u.MaxSplats = splathost.Null[int64]()
		if n != nil {
			u.MaxSplats = splathost.Value(*n)
		}
	}
	if fl.Changed("overage") {
		u.Overage = &af.overage
	}
	return u, nil
}

func (a *app) accountsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "accounts", Short: "Create, show and change billing accounts"}
	var af accountFlags
	create := &cobra.Command{
		Use:   "create --name NAME --storage-bundle SIZE",
		Short: "Create an account",
		Args:  cobra.NoArgs,
		RunE: a.runSDK(func(cmd *cobra.Command, _ []string, c *splathost.Client) error {
			// Create has every field: read them through the update's parsing, then require them.
			u, err := af.update(cmd)
			if err != nil {
				return err
			}
			in := splathost.NewAccount{Name: af.name, Plan: splathost.Plan(af.plan), StorageBundleBytes: *u.StorageBundleBytes,
				Overage: af.overage}
			if n, ok := u.MaxSplats.Get(); ok {
				in.MaxSplats = &n
			}
			acct, err := c.CreateAccount(cmd.Context(), in)
			return a.printAccount(acct, err, "created account")
		}),
	}
	af.register(create, true)
	get := a.byID("get <accountId>", "Show an account", func(cmd *cobra.Command, c *splathost.Client, id string) error {
		acct, err := c.GetAccount(cmd.Context(), id)
		return a.printAccount(acct, err, "")
	})
	update := a.byID("update <accountId>", "Change an account; only the flags given are changed", func(cmd *cobra.Command, c *splathost.Client, id string) error {
		u, err := af.update(cmd)
		if err != nil {
			return err
		}
		acct, err := c.UpdateAccount(cmd.Context(), id, u)
		return a.printAccount(acct, err, "updated account")
	})
	af.register(update, false)
	cmd.AddCommand(create, get, update)
	return cmd
}

// printAccount prints acct, the answer of an SDK call, or returns the call's err; done, when
// not empty, is what the call did ("created account"), said first with the account named.
func (a *app) printAccount(acct *splathost.Account, err error, done string) error {
	if err != nil {
		return err
	}
	if done != "" {
		done = fmt.Sprintf("%s %s %q", done, acct.ID, acct.Name)
	}
	return a.printDone(acct, done, func(w *tabwriter.Writer) {
		row(w, "ID", "NAME", "PLAN", "STORAGE BUNDLE", "USED", "MAX SPLATS", "SPLATS", "OVERAGE")
		row(w, acct.ID, acct.Name, acct.Plan, a.size(acct.StorageBundleBytes), a.size(acct.UsedBytes), orNone(acct.MaxSplats), acct.SplatCount, acct.Overage)
	})
}

// units are the size suffixes parseBytes accepts, longest first so "MiB" is not read as "B".
var units = []struct {
	suffix string
	factor int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// parseBytes reads a byte count, plain or with a unit (10GiB, 500MB).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, factor = strings.TrimSpace(rest), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (factor > 1 && n > (1<<63-1)/factor) {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	return n * factor, nil
}

// parseCap reads a cap where "none" (or empty) means no cap.
func parseCap(s string) (*int64, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%q is neither a count nor none", s)
	}
	return &n, nil
}
