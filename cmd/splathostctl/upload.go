package main

import (
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

func (a *app) uploadCommand() *cobra.Command {
	var keys integrationKeys
	var customer, title, description, visibility, resume string
	var concurrency int
	var multipart bool
	cmd := &cobra.Command{
		Use:   "upload <file|folder> --customer EU",
		Short: "Upload a scene file or a LOD folder for a customer and commit it (integrator keys)",
		Long: "Upload a scene file or a LOD folder for a customer and commit it (integrator keys).\n\n" +
			"A file above 100 MiB (or any file from 5 MiB with --multipart) goes in parallel, resumable parts.\n" +
			"If the upload is interrupted (Ctrl-C, SIGTERM, a lost connection), nothing is committed, the parts\n" +
			"already stored are kept, and the command prints itself again with --resume UPLOAD_ID: run that and\n" +
			"only the parts not yet stored are sent, then the scene is committed. An interruption during the\n" +
			"commit itself waits for the commit (a second Ctrl-C quits at once).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.integrationSDK(keys, "upload")
			if err != nil {
				return err
			}
			st, err := os.Stat(args[0])
			if err != nil {
				return err
			}
			bar := newProgressBar(a.stderr, isTerminal(a.stderr), a.size)
			var uploadID string
			// Once every byte is stored the commit follows: a signal then waits for it, so an
			// interruption never leaves it unknown whether the scene was committed.
			defer a.interrupts.release()
			progress := func(p splathost.Progress) {
				bar.update(p)
				if p.BytesDone == p.BytesTotal && p.FilesDone == p.FilesTotal {
					a.interrupts.hold()
				}
			}
			o := splathost.UploadOptions{Title: title, Description: description, Visibility: splathost.Visibility(visibility),
				Concurrency: concurrency, OnProgress: progress, Multipart: multipart, UploadID: resume,
				OnUploadStarted: func(id string) { uploadID = id }}
			var res *splathost.CommitResult
			if st.IsDir() {
				res, err = c.UploadFolder(cmd.Context(), customer, args[0], o)
			} else {
				res, err = c.UploadFile(cmd.Context(), customer, args[0], o)
			}
			bar.finish()
			if err != nil && uploadID != "" {
				return &resumable{err: err, what: "upload", interrupted: a.interrupts.fired(), uploadID: uploadID,
					command: rerun(a.args, "--resume", uploadID), note: "nothing was committed and the parts already stored are kept"}
			}
			if err != nil && a.interrupts.fired() {
				return fmt.Errorf("upload interrupted; nothing was committed: %w", err)
			}
			if err != nil {
				return err
			}
			return a.printDone(res, fmt.Sprintf("uploaded and committed scene %s %q (%s) for %s", res.SplatID, res.Splat.Title,
				a.size(res.Splat.FileSizeBytes), customer), func(w *tabwriter.Writer) {
				row(w, "SPLAT ID", "TITLE", "TYPE", "SIZE", "VISIBILITY", "ACCOUNT USED")
				row(w, res.SplatID, res.Splat.Title, res.Splat.SplatType, a.size(res.Splat.FileSizeBytes), res.Splat.Visibility, a.size(res.Usage.UsedBytes))
			})
		},
	}
	f := cmd.Flags()
	keys.addFlags(f)
	f.StringVar(&customer, "customer", "", "external user id the scene belongs to (required)")
	f.StringVar(&title, "title", "", "scene title (default: the file or folder name)")
	f.StringVar(&description, "description", "", "scene description")
	f.StringVar(&visibility, "visibility", "", "private (default) or public")
	f.IntVar(&concurrency, "concurrency", 8, "parallel uploads of a folder's files or of a file's parts")
	f.BoolVar(&multipart, "multipart", false, "upload a file of at least 5 MiB in resumable parts (always above 100 MiB)")
	f.StringVar(&resume, "resume", "", "resume the interrupted multipart upload with this id (same file)")
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
	size     func(int64) string
}

// newProgressBar draws on w (redrawing one line when tty), rendering byte counts with size.
func newProgressBar(w io.Writer, tty bool, size func(int64) string) *progressBar {
	return &progressBar{w: w, tty: tty, lastStep: -1, size: size}
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
			fmt.Fprintf(b.w, "\r%s", b.barLine(p, 30))
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
		fmt.Fprintln(b.w, "upload:", b.summary(p))
	case !done && step > b.lastStep:
		b.lastStep = step
		fmt.Fprintln(b.w, "upload:", b.summary(p))
	}
}

// finish ends the bar's line so later output starts on a fresh one.
func (b *progressBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.started {
		fmt.Fprintf(b.w, "\r%s\n", b.barLine(b.last, 30))
	}
}

// barLine is "[#####-----]  50%  1.0 MiB/2.0 MiB  3/6 files".
func (b *progressBar) barLine(p splathost.Progress, width int) string {
	filled := 0
	if p.BytesTotal > 0 {
		filled = int(p.BytesDone * int64(width) / p.BytesTotal)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "] " + b.summary(p)
}

func (b *progressBar) summary(p splathost.Progress) string {
	pct := int64(100)
	if p.BytesTotal > 0 {
		pct = p.BytesDone * 100 / p.BytesTotal
	}
	return fmt.Sprintf("%3d%%  %s/%s  %d/%d files", pct, b.size(p.BytesDone), b.size(p.BytesTotal), p.FilesDone, p.FilesTotal)
}

// size renders bytes in binary units with one decimal, dropped when it is zero: "512 B",
// "1.5 KiB", "10 GiB".
func size(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	num := strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/float64(div)), ".0")
	return fmt.Sprintf("%s%s %ciB", sign, num, "KMGTPE"[exp])
}
