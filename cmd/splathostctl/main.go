// Command splathostctl is the operator's command line: accounts, integrations and their keys,
// customer usage, the Temporal workflows behind clone jobs and retention timers, the orphan
// sweep, and for integrators a one-shot upload. HTTP goes through the Go SDK; workflows through
// the Temporal client.
//
// Connection settings come from flags, then the environment (SPLATHOST_URL,
// SPLATHOST_ADMIN_TOKEN, SPLATHOST_TEMPORAL_ADDR, SPLATHOST_TEMPORAL_NAMESPACE), then the dev
// stack's .dev/stack.json found in the working directory or above it, so that under `make dev`
// no setting is needed. --json switches every command to machine output on stdout.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/splathost/splathost/internal/stackstate"
	splathost "github.com/splathost/splathost/sdk/go"
)

func main() {
	app := &app{stdout: os.Stdout, stderr: os.Stderr}
	root := app.rootCommand()
	if err := root.Execute(); err != nil {
		app.fail(err)
		os.Exit(1)
	}
}

// app holds the resolved global settings every command uses.
type app struct {
	url, adminToken       string
	temporalAddr, tempoNS string
	json                  bool
	stdout, stderr        io.Writer
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "splathostctl",
		Short:         "Operate a splathost deployment",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.resolve()
			return nil
		},
	}
	f := root.PersistentFlags()
	f.StringVar(&a.url, "url", "", "gateway base URL (env SPLATHOST_URL; default gatewayUrl of .dev/stack.json)")
	f.StringVar(&a.adminToken, "admin-token", "", "operator admin token (env SPLATHOST_ADMIN_TOKEN; default from .dev/stack.json)")
	f.StringVar(&a.temporalAddr, "temporal", "", "Temporal frontend host:port (env SPLATHOST_TEMPORAL_ADDR; default from .dev/stack.json)")
	f.StringVar(&a.tempoNS, "temporal-namespace", "", "Temporal namespace (env SPLATHOST_TEMPORAL_NAMESPACE; default from .dev/stack.json, else \"default\")")
	f.BoolVar(&a.json, "json", false, "print machine-readable JSON instead of tables")
	root.AddCommand(a.accountsCommand(), a.integrationsCommand(), a.customersCommand(),
		a.workflowsCommand(), a.sweepCommand(), a.uploadCommand(), a.renditionsCommand(), a.analyticsCommand(),
		a.webhooksCommand())
	return root
}

// resolve fills each unset setting from the environment, then from the dev stack's state.
func (a *app) resolve() {
	st := findStackState()
	pick := func(v *string, env, fromStack string) {
		if *v == "" {
			*v = os.Getenv(env)
		}
		if *v == "" {
			*v = fromStack
		}
	}
	pick(&a.url, "SPLATHOST_URL", st.GatewayURL)
	pick(&a.adminToken, "SPLATHOST_ADMIN_TOKEN", st.AdminToken)
	pick(&a.temporalAddr, "SPLATHOST_TEMPORAL_ADDR", st.TemporalAddr)
	pick(&a.tempoNS, "SPLATHOST_TEMPORAL_NAMESPACE", st.TemporalNamespace)
	if a.tempoNS == "" {
		a.tempoNS = "default"
	}
}

// findStackState reads .dev/stack.json from the working directory or the nearest parent that
// has one; a missing or unreadable file gives the zero state (no defaults).
func findStackState() stackstate.State {
	var st stackstate.State
	dir, err := os.Getwd()
	if err != nil {
		return st
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, ".dev", "stack.json")); err == nil {
			_ = json.Unmarshal(b, &st)
			return st
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return st
		}
		dir = parent
	}
}

// sdk is an SDK client with the operator's credentials, plus the integration keys if given.
func (a *app) sdk(opts ...splathost.Option) (*splathost.Client, error) {
	if a.url == "" {
		return nil, errors.New("no gateway URL: pass --url, set SPLATHOST_URL or run `make dev`")
	}
	return splathost.New(a.url, append([]splathost.Option{splathost.WithAdminToken(a.adminToken),
		splathost.WithUserAgent("splathostctl")}, opts...)...)
}

// runSDK adapts a command body that needs the operator's SDK client to cobra's RunE.
func (a *app) runSDK(body func(cmd *cobra.Command, args []string, c *splathost.Client) error) func(*cobra.Command, []string) error {
	return a.runWith(func() (*splathost.Client, error) { return a.sdk() }, body)
}

// runWith adapts a command body that needs the SDK client client makes to cobra's RunE.
func (a *app) runWith(client func() (*splathost.Client, error), body func(cmd *cobra.Command, args []string, c *splathost.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := client()
		if err != nil {
			return err
		}
		return body(cmd, args, c)
	}
}

// byID is a command on one resource: use names it and its id argument ("get <accountId>"),
// and run gets the SDK client and that id.
func (a *app) byID(use, short string, run func(cmd *cobra.Command, c *splathost.Client, id string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: a.runSDK(func(cmd *cobra.Command, args []string, c *splathost.Client) error {
			return run(cmd, c, args[0])
		})}
}

// print writes v as JSON with --json, else the table that table draws.
func (a *app) print(v any, table func(w *tabwriter.Writer)) error {
	if a.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// fail reports err on stderr; with --json also as {"error": …} on stdout, so a script reading
// stdout always gets JSON.
func (a *app) fail(err error) {
	fmt.Fprintln(a.stderr, "splathostctl:", err)
	if !a.json {
		return
	}
	out := map[string]any{"message": err.Error()}
	var apiErr *splathost.APIError
	if errors.As(err, &apiErr) {
		out = map[string]any{"status": apiErr.Status, "code": apiErr.Code, "message": apiErr.Message, "issues": apiErr.Issues}
	}
	_ = json.NewEncoder(a.stdout).Encode(map[string]any{"error": out})
}

// row writes tab-separated cells as one table line.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// orNone renders an optional number, where nil means "no cap".
func orNone(v *int64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}
