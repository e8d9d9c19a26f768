// Command splathostctl is the operator's command line: accounts, integrations and their keys,
// customer usage, the Temporal workflows behind clone jobs, retention timers and renditions,
// the orphan sweep, renditions, and for integrators upload, clone, webhooks and analytics. HTTP
// goes through the Go SDK; workflows through the Temporal client.
//
// Connection settings come from flags, then the environment (SPLATHOST_URL,
// SPLATHOST_ADMIN_TOKEN, SPLATHOST_TEMPORAL_ADDR, SPLATHOST_TEMPORAL_NAMESPACE), then the dev
// stack's .dev/stack.json found in the working directory or above it, so that under `make dev`
// no setting is needed. --json switches every command to machine output on stdout; --bytes
// prints sizes as plain byte counts instead of "10 GiB".
//
// The first SIGINT or SIGTERM cancels the running command, which stops its work and says how to
// pick it up again (an upload prints the command that resumes it); a second one ends the process
// at once.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/splathost/splathost/internal/stackstate"
	splathost "github.com/splathost/splathost/sdk/go"
)

func main() {
	app := &app{stdout: os.Stdout, stderr: os.Stderr, args: os.Args}
	ctx, stop := app.trapSignals(context.Background())
	err := app.rootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		app.fail(err)
		if app.interrupts.fired() {
			os.Exit(130) // the shell's code for a command ended by SIGINT
		}
		os.Exit(1)
	}
}

// app holds the resolved global settings every command uses.
type app struct {
	url, adminToken       string
	temporalAddr, tempoNS string
	json, rawBytes        bool
	stdout, stderr        io.Writer
	// args is the command line as run, from which a command builds the one that resumes it.
	args []string
	// interrupts is nil outside main (in tests), where no signal is trapped.
	interrupts *interrupter
}

// interrupter turns the first SIGINT or SIGTERM into the cancellation of the command's context,
// so the command stops its work and says how to pick it up again. A command holds the
// cancellation off over a step that must not be cut half way (the commit that ends an upload):
// the signal then takes effect on release. Only the first signal is trapped; a second one has
// its default effect and ends the process at once.
type interrupter struct {
	mu                    sync.Mutex
	cancel                context.CancelFunc
	signalled, held, told bool
	stderr                io.Writer
}

// trapSignals returns the context the first SIGINT or SIGTERM cancels, and the function that
// stops trapping.
func (a *app) trapSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupter{cancel: cancel, stderr: a.stderr}
	a.interrupts = in
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
			signal.Stop(ch)
			in.fire()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func (in *interrupter) fire() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.signalled = true
	if in.held {
		in.told = true
		fmt.Fprintln(in.stderr, "splathostctl: interrupted; finishing the step under way first (interrupt again to quit at once)")
		return
	}
	in.cancel()
}

// fired reports whether a signal arrived.
func (in *interrupter) fired() bool {
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.signalled
}

// hold defers a signal's cancellation until release.
func (in *interrupter) hold() {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.held = true
}

// release ends a hold, cancelling now if a signal arrived during it.
func (in *interrupter) release() {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.held = false
	if in.signalled {
		in.cancel()
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "splathostctl",
		Short: "Operate a splathost deployment",
		Long: "Operate a splathost deployment.\n\n" +
			"Operator commands (the admin token): accounts, integrations, customers, workflows, sweep, renditions.\n" +
			"Integrator commands (an integration's keys, --public-key and --secret-key): upload, clone, webhooks, analytics.\n\n" +
			"Under `make dev` no connection setting is needed: they come from .dev/stack.json. Every command prints\n" +
			"a table, or JSON with --json; a command that changes something first says what it did, in one line.\n" +
			"Sizes are shown as 10 GiB, or as byte counts with --bytes. Ctrl-C stops a command cleanly: an\n" +
			"interrupted upload prints the command that resumes it.",
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
	f.BoolVar(&a.rawBytes, "bytes", false, "print sizes as plain byte counts (10737418240) instead of 10 GiB")
	root.AddCommand(a.accountsCommand(), a.integrationsCommand(), a.customersCommand(),
		a.workflowsCommand(), a.sweepCommand(), a.renditionsCommand(), a.uploadCommand(), a.cloneCommand(),
		a.webhooksCommand(), a.analyticsCommand())
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
	return a.printDone(v, "", table)
}

// printDone is print for a command that changed something: without --json, the line done
// (what it did, naming the object) comes first, then the table if there is one. With --json only
// v is printed, since a script reads the object itself.
func (a *app) printDone(v any, done string, table func(w *tabwriter.Writer)) error {
	if a.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if done != "" {
		fmt.Fprintln(a.stdout, done)
	}
	if table == nil {
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// size renders a byte count for the tables: "10 GiB", or the plain count with --bytes.
func (a *app) size(n int64) string {
	if a.rawBytes {
		return strconv.FormatInt(n, 10)
	}
	return size(n)
}

// secretFlags are the flags whose values are secrets, with the variable that gives them too:
// a printed command names the variable, never the secret, which would otherwise land in
// terminals, CI logs and support tickets.
var secretFlags = map[string]string{"--secret-key": "SPLATHOST_SECRET_KEY", "--admin-token": "SPLATHOST_ADMIN_TOKEN"}

// rerun is the command line args with flag set to value (replacing any value it had) and the
// boolean flags drop removed, each argument quoted for a POSIX shell: the command that picks
// an interrupted one up again. A secret flag's value is printed as its variable
// ("$SPLATHOST_SECRET_KEY"), which the shell running the command must have set.
func rerun(args []string, flag, value string, drop ...string) string {
	var out []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, _, hasValue := strings.Cut(arg, "=")
		if i > 0 && name == flag {
			if !hasValue {
				i++ // the value is the next argument
			}
			continue
		}
		if i > 0 && slices.Contains(drop, name) {
			continue
		}
		if v, secret := secretFlags[name]; i > 0 && secret {
			if !hasValue {
				i++
			}
			out = append(out, name, `"$`+v+`"`)
			continue
		}
		out = append(out, shellQuote(arg))
	}
	return strings.Join(append(out, flag, shellQuote(value)), " ")
}

// shellQuote leaves a word of safe characters as it is and single-quotes any other.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	var re *resumable
	if errors.As(err, &re) {
		out["interrupted"], out["resumeCommand"] = re.interrupted, re.command
		if re.uploadID != "" {
			out["uploadId"] = re.uploadID
		}
		if re.jobID != "" {
			out["jobId"] = re.jobID
		}
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

// resumable is a command's failure (or interruption) after which the same work can be picked up
// again: its message ends with the command that does so.
type resumable struct {
	err         error
	what        string // "upload" or "clone"
	interrupted bool
	// uploadID or jobID is what the command picks up.
	uploadID, jobID string
	command         string
	note            string // why and how the command resumes, one clause
}

func (r *resumable) Error() string {
	cause := "failed: " + r.err.Error()
	if r.interrupted {
		cause = "interrupted"
	}
	return fmt.Sprintf("%s %s; %s. Resume it with:\n  %s", r.what, cause, r.note, r.command)
}

func (r *resumable) Unwrap() error { return r.err }

// orNone renders an optional number, where nil means "no cap".
func orNone(v *int64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}
