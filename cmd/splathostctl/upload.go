package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

// keysClient is an SDK client with the integration's keys, from the flags or the environment
// (SPLATHOST_PUBLIC_KEY, SPLATHOST_SECRET_KEY); what names the command needing them.
func (a *app) keysClient(what, publicKey, secretKey string) (*splathost.Client, error) {
	if publicKey == "" {
		publicKey = os.Getenv("SPLATHOST_PUBLIC_KEY")
	}
	if secretKey == "" {
		secretKey = os.Getenv("SPLATHOST_SECRET_KEY")
	}
	if publicKey == "" || secretKey == "" {
		return nil, errors.New(what + " needs the integration's keys: --public-key and --secret-key (or SPLATHOST_PUBLIC_KEY, SPLATHOST_SECRET_KEY)")
	}
	return a.sdk(splathost.WithKeys(publicKey, secretKey))
}

func (a *app) uploadCommand() *cobra.Command {
	var publicKey, secretKey, customer, title, description, visibility string
	var concurrency int
	cmd := &cobra.Command{
		Use:   "upload <file|folder> --customer EU",
		Short: "Upload a scene file or a LOD folder for a customer and commit it (integrator keys)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.keysClient("upload", publicKey, secretKey)
			if err != nil {
				return err
			}
			st, err := os.Stat(args[0])
			if err != nil {
				return err
			}
			bar := newProgressBar(a.stderr, isTerminal(a.stderr))
			o := splathost.UploadOptions{Title: title, Description: description, Visibility: splathost.Visibility(visibility),
				Concurrency: concurrency, OnProgress: bar.update}
			var res *splathost.CommitResult
			if st.IsDir() {
				res, err = c.UploadFolder(cmd.Context(), customer, args[0], o)
			} else {
				res, err = c.UploadFile(cmd.Context(), customer, args[0], o)
			}
			bar.finish()
			if err != nil {
				return err
			}
			return a.print(res, func(w *tabwriter.Writer) {
				row(w, "SPLAT ID", "TITLE", "TYPE", "SIZE", "VISIBILITY", "ACCOUNT USED")
				row(w, res.SplatID, res.Splat.Title, res.Splat.SplatType, res.Splat.FileSizeBytes, res.Splat.Visibility, res.Usage.UsedBytes)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&publicKey, "public-key", "", "integration public key, mpk_… (env SPLATHOST_PUBLIC_KEY)")
	f.StringVar(&secretKey, "secret-key", "", "integration secret key, msk_… (env SPLATHOST_SECRET_KEY)")
	f.StringVar(&customer, "customer", "", "external user id the scene belongs to (required)")
	f.StringVar(&title, "title", "", "scene title (default: the file or folder name)")
	f.StringVar(&description, "description", "", "scene description")
	f.StringVar(&visibility, "visibility", "", "private (default) or public")
	f.IntVar(&concurrency, "concurrency", 8, "parallel uploads of a folder's files")
	_ = cmd.MarkFlagRequired("customer")
	return cmd
}

// isTerminal reports whether w is a character device, where a redrawn bar makes sense; a file
// or pipe gets plain lines instead.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws upload progress on a terminal (one redrawn line, at most ten times a
// second) or writes a plain line at every tenth of the bytes for logs.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	last     splathost.Progress
	drawn    time.Time
	lastStep int64
	final    bool
	started  bool
}

func newProgressBar(w io.Writer, tty bool) *progressBar {
	return &progressBar{w: w, tty: tty, lastStep: -1}
}

// update is the SDK's progress callback.
func (b *progressBar) update(p splathost.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last, b.started = p, true
	done := p.BytesDone == p.BytesTotal && p.FilesDone == p.FilesTotal
	if b.tty {
		if done || time.Since(b.drawn) >= 100*time.Millisecond {
			b.drawn = time.Now()
			fmt.Fprintf(b.w, "\r%s", barLine(p, 30))
		}
		return
	}
	step := int64(10)
	if p.BytesTotal > 0 {
		step = p.BytesDone * 10 / p.BytesTotal
	}
	switch {
	case done && !b.final:
		b.final = true
		fmt.Fprintln(b.w, "upload:", summary(p))
	case !done && step > b.lastStep:
		b.lastStep = step
		fmt.Fprintln(b.w, "upload:", summary(p))
	}
}

// finish ends the bar's line so later output starts on a fresh one.
func (b *progressBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.started {
		fmt.Fprintf(b.w, "\r%s\n", barLine(b.last, 30))
	}
}

// barLine is "[#####-----]  50%  1.0 MiB/2.0 MiB  3/6 files".
func barLine(p splathost.Progress, width int) string {
	filled := 0
	if p.BytesTotal > 0 {
		filled = int(p.BytesDone * int64(width) / p.BytesTotal)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "] " + summary(p)
}

func summary(p splathost.Progress) string {
	pct := int64(100)
	if p.BytesTotal > 0 {
		pct = p.BytesDone * 100 / p.BytesTotal
	}
	return fmt.Sprintf("%3d%%  %s/%s  %d/%d files", pct, size(p.BytesDone), size(p.BytesTotal), p.FilesDone, p.FilesTotal)
}

// size renders bytes in binary units.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
