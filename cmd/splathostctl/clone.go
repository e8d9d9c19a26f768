package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	splathost "github.com/splathost/splathost/sdk/go"
)

// clonePollInterval is the wait between polls of a clone job, inside the spec's 1-2 s.
const clonePollInterval = time.Second

// cloneCommand clones a scene for a customer (POST /api/v1/splats/{id}/clone) and, unless
// --async, polls the job (GET …/clone/{jobId}) until the copy is done, printing its progress.
func (a *app) cloneCommand() *cobra.Command {
	var keys integrationKeys
	var customer, jobID string
	var async bool
	cmd := &cobra.Command{
		Use:   "clone <splatId> --customer EU [--async | --job JOB ID]",
		Short: "Clone a scene for a customer and wait for the copy, printing its progress (integrator keys)",
		Long: "Clone a scene for a customer (a Duplicate of the customer's own scene, or a Remix of another owner's\n" +
			"public scene that allows it) and wait for the copy, printing copied/total objects as it goes.\n\n" +
			"With --async the command prints the clone job's id and returns. A job goes on only while it is\n" +
			"polled (it is rolled back after a few minutes without polls): wait for it with --job JOB ID. An\n" +
			"interrupted wait prints that command too.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if async && jobID != "" {
				return fmt.Errorf("--async and --job exclude each other")
			}
			c, err := a.integrationSDK(keys, "clone")
			if err != nil {
				return err
			}
			ctx, src := cmd.Context(), args[0]
			o := splathost.CloneOptions{RespondAsync: true, PollInterval: clonePollInterval,
				OnProgress: a.cloneProgress()}
			if async {
				res, job, err := c.StartClone(ctx, customer, src, o)
				if err != nil {
					return err
				}
				if res != nil {
					return a.printClone(res, customer)
				}
				return a.printDone(job, fmt.Sprintf("started cloning scene %s for %s: job %s", src, customer, job.JobID), func(w *tabwriter.Writer) {
					row(w, "JOB ID", "SOURCE", "COPIED", "TOTAL")
					row(w, job.JobID, job.SourceSplatID, job.CopiedObjects, job.TotalObjects)
					row(w)
					row(w, "the copy goes on only while polled; wait for it with:")
					row(w, "  "+rerun(a.args, "--job", job.JobID, "--async"))
				})
			}
			var res *splathost.CloneResult
			if jobID != "" {
				res, err = c.WaitClone(ctx, customer, src, jobID, o)
			} else {
				var job *splathost.CloneJob
				res, job, err = c.StartClone(ctx, customer, src, o)
				// The customer's running clone of this scene (a 429) is waited for, as the spec lets a
				// client resume polling the job it names.
				var e *splathost.APIError
				if errors.As(err, &e) && e.CloneInProgress != nil && e.CloneInProgress.SourceSplatID == src {
					job, err = &splathost.CloneJob{JobID: e.CloneInProgress.JobID, SourceSplatID: src}, nil
				}
				if err == nil && res == nil {
					o.OnProgress(*job)
					jobID = job.JobID
					res, err = c.WaitClone(ctx, customer, src, jobID, o)
				}
			}
			if err != nil && jobID != "" && ctx.Err() != nil {
				return &resumable{err: err, what: "clone", interrupted: a.interrupts.fired(), jobID: jobID,
					command: rerun(a.args, "--job", jobID), note: "job " + jobID + " is rolled back after a few minutes without polls"}
			}
			if err != nil {
				return err
			}
			return a.printClone(res, customer)
		},
	}
	f := cmd.Flags()
	keys.addFlags(f)
	f.StringVar(&customer, "customer", "", "external user id the clone belongs to (required)")
	f.BoolVar(&async, "async", false, "print the clone job's id and return instead of waiting")
	f.StringVar(&jobID, "job", "", "wait for this running clone job of the scene instead of starting one")
	_ = cmd.MarkFlagRequired("customer")
	return cmd
}

// cloneProgress prints a job's copied/total objects on stderr each time they change; before
// the job has counted its objects (total 0) it says the job started.
func (a *app) cloneProgress() func(splathost.CloneJob) {
	last, started := -1, false
	return func(j splathost.CloneJob) {
		if j.TotalObjects == 0 {
			if !started {
				fmt.Fprintf(a.stderr, "clone: job %s started\n", j.JobID)
				started = true
			}
			return
		}
		if j.CopiedObjects == last {
			return
		}
		last = j.CopiedObjects
		fmt.Fprintf(a.stderr, "clone: %d/%d objects copied\n", j.CopiedObjects, j.TotalObjects)
	}
}

// printClone prints a finished clone.
func (a *app) printClone(res *splathost.CloneResult, customer string) error {
	return a.printDone(res, fmt.Sprintf("cloned scene %s into %s %q (%s) for %s", res.SourceSplatID, res.SplatID,
		res.Splat.Title, a.size(res.Splat.FileSizeBytes), customer), func(w *tabwriter.Writer) {
		row(w, "SPLAT ID", "SOURCE", "TITLE", "SIZE", "ACCOUNT USED")
		row(w, res.SplatID, res.SourceSplatID, res.Splat.Title, a.size(res.Splat.FileSizeBytes), a.size(res.Usage.UsedBytes))
	})
}
