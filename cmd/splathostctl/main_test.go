package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	splathost "github.com/splathost/splathost/sdk/go"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "10GiB": 10 << 30, "2 MiB": 2 << 20, "5MB": 5e6, "7B": 7, "1TiB": 1 << 40} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "x", "-1", "1.5GiB", "9999999999TiB"} {
		_, err := parseBytes(in)
		require.Error(t, err, in)
	}
}

func TestParseCap(t *testing.T) {
	n, err := parseCap("none")
	require.NoError(t, err)
	require.Nil(t, n)
	n, err = parseCap("3")
	require.NoError(t, err)
	require.EqualValues(t, 3, *n)
	_, err = parseCap("-3")
	require.Error(t, err)
}

func TestVisibilityQueryQuotesTheCustomersText(t *testing.T) {
	q, local := workflowFilter{integrationID: "i1", customer: `o'brien`, typ: "clone"}.query()
	require.Equal(t, `integrationId = 'i1' AND externalUserId = 'o\'brien' AND WorkflowType = 'CloneScene'`, q)
	require.Empty(t, local)
	q, local = workflowFilter{integrationID: "i1", customer: `back\slash`, typ: "Custom"}.query()
	require.Equal(t, `integrationId = 'i1' AND WorkflowType = 'Custom'`, q)
	require.Equal(t, `back\slash`, local, "matched on the rows instead")
}

func TestVisibilityQueryByScene(t *testing.T) {
	q, _ := workflowFilter{scene: "s'1", customer: "eu", typ: "renditions"}.query()
	require.Equal(t, `(splatId = 's\'1' OR sourceSplatId = 's\'1') AND externalUserId = 'eu' AND WorkflowType = 'SceneRenditions'`, q)
}

// run executes the CLI's root command with args and no connection settings, as in a directory
// without .dev/stack.json and with no SPLATHOST_ variables.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, v := range []string{"SPLATHOST_URL", "SPLATHOST_ADMIN_TOKEN", "SPLATHOST_TEMPORAL_ADDR", "SPLATHOST_PUBLIC_KEY", "SPLATHOST_SECRET_KEY"} {
		t.Setenv(v, "")
	}
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, args: append([]string{"splathostctl"}, args...)}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestHelpListsEveryCommand(t *testing.T) {
	out, _, err := run(t, "--help")
	require.NoError(t, err)
	for _, c := range []string{"accounts", "integrations", "customers", "workflows", "sweep", "renditions", "upload", "clone", "webhooks", "analytics"} {
		require.Regexp(t, `(?m)^  `+c+` `, out, "root help lists %s", c)
	}
	require.Contains(t, out, "--bytes")

	// The workflow types the list accepts are all in its help, renditions among them.
	out, _, err = run(t, "workflows", "list", "--help")
	require.NoError(t, err)
	for typ := range workflowTypes {
		require.Contains(t, out, typ)
	}
	for _, f := range []string{"--scene", "--customer", "--integration", "--public-key"} {
		require.Contains(t, out, f)
	}
	out, _, err = run(t, "clone", "--help")
	require.NoError(t, err)
	require.Contains(t, out, "--async")
	require.Contains(t, out, "--job")
	out, _, err = run(t, "upload", "--help")
	require.NoError(t, err)
	require.Contains(t, out, "--resume UPLOAD_ID")
}

func TestWorkflowsListNeedsAScope(t *testing.T) {
	_, _, err := run(t, "workflows", "list", "--temporal", "127.0.0.1:1", "--customer", "eu")
	require.ErrorContains(t, err, "integration's keys")
	_, _, err = run(t, "workflows", "list", "--temporal", "127.0.0.1:1")
	require.ErrorContains(t, err, "needs --integration, --scene, or --customer")
}

func TestCloneFlagsExcludeEachOther(t *testing.T) {
	_, _, err := run(t, "clone", "s1", "--customer", "eu", "--async", "--job", "j1")
	require.ErrorContains(t, err, "exclude each other")
}

func TestRerunReplacesTheFlagAndQuotes(t *testing.T) {
	args := []string{"bin/splathostctl", "upload", "my scene.ply", "--secret-key", "msk_x", "--resume", "old", "--title=it's"}
	require.Equal(t, `bin/splathostctl upload 'my scene.ply' --secret-key "$SPLATHOST_SECRET_KEY" '--title=it'\''s' --resume u1`, rerun(args, "--resume", "u1"),
		"the secret is named by its variable, never printed")
	args = []string{"splathostctl", "upload", "f.ply", "--admin-token=t0ken", "--secret-key=msk_y"}
	require.Equal(t, `splathostctl upload f.ply --admin-token "$SPLATHOST_ADMIN_TOKEN" --secret-key "$SPLATHOST_SECRET_KEY" --resume u2`, rerun(args, "--resume", "u2"))
	args = []string{"splathostctl", "clone", "s1", "--async", "--customer", "eu", "--resume=x"}
	require.Equal(t, `splathostctl clone s1 --customer eu --resume=x --job j1`, rerun(args, "--job", "j1", "--async"))
}

func TestResumableSaysHowToResume(t *testing.T) {
	err := &resumable{err: context.Canceled, what: "upload", interrupted: true, uploadID: "u1",
		command: "splathostctl upload a.ply --resume u1", note: "nothing was committed"}
	require.Equal(t, "upload interrupted; nothing was committed. Resume it with:\n  splathostctl upload a.ply --resume u1", err.Error())
	require.ErrorIs(t, err, context.Canceled)
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: io.Discard, json: true}
	a.fail(fmt.Errorf("wrapped: %w", err))
	require.JSONEq(t, `{"error":{"message":"wrapped: `+strings.ReplaceAll(err.Error(), "\n", `\n`)+`","interrupted":true,
		"resumeCommand":"splathostctl upload a.ply --resume u1","uploadId":"u1"}}`, out.String())
}

func TestInterrupterHoldsOffTheCancelUntilRelease(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := &interrupter{cancel: cancel, stderr: io.Discard}
	in.hold()
	in.fire()
	require.NoError(t, ctx.Err(), "held: the step under way finishes")
	require.True(t, in.fired())
	in.release()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	var none *interrupter
	none.hold()
	none.release()
	require.False(t, none.fired(), "no interrupter outside main")
}

func TestSizesAreHumanUnlessBytes(t *testing.T) {
	a := &app{}
	require.Equal(t, "10 GiB", a.size(10<<30))
	require.Equal(t, "0 B", a.size(0))
	a.rawBytes = true
	require.Equal(t, "10737418240", a.size(10<<30))
	var out bytes.Buffer
	b := newProgressBar(&out, false, a.size)
	b.update(splathost.Progress{BytesTotal: 2048, BytesDone: 2048, FilesTotal: 1, FilesDone: 1})
	require.Equal(t, "upload: 100%  2048/2048  1/1 files\n", out.String())
}

// feed runs an upload of 20 equal files through a bar.
func feed(b *progressBar) {
	p := splathost.Progress{BytesTotal: 2000, FilesTotal: 20}
	b.update(p)
	for range 20 {
		p.BytesDone += 100
		b.update(p)
		p.FilesDone++
		b.update(p)
	}
	b.finish()
}

func TestPlainProgressWritesAtMostAboutElevenLines(t *testing.T) {
	var out bytes.Buffer
	feed(newProgressBar(&out, false, size))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.LessOrEqual(t, len(lines), 12)
	require.Equal(t, "upload: 100%  2 KiB/2 KiB  20/20 files", lines[len(lines)-1])
	require.Equal(t, 1, strings.Count(out.String(), "20/20 files"), "the final line once")
	require.NotContains(t, out.String(), "\r")
}

func TestTerminalProgressRedrawsOneLine(t *testing.T) {
	var out bytes.Buffer
	feed(newProgressBar(&out, true, size))
	s := out.String()
	require.True(t, strings.HasPrefix(s, "\r["), s)
	require.Equal(t, 1, strings.Count(s, "\n"), "one line, ended by finish")
	require.True(t, strings.HasSuffix(s, "\r[##############################] 100%  2 KiB/2 KiB  20/20 files\n"), s)
}

func TestSize(t *testing.T) {
	require.Equal(t, "512 B", size(512))
	require.Equal(t, "1.5 KiB", size(1536))
	require.Equal(t, "3 GiB", size(3<<30))
	require.Equal(t, "10 GiB", size(10737418240))
	require.Equal(t, "1023 B", size(1023))
	require.Equal(t, "112.9 MiB", size(118_374_400))
}

func TestSparklineScalesToTheBusiestDay(t *testing.T) {
	require.Equal(t, "▁▁▁", sparkline([]int64{0, 0, 0}), "no views: all lowest")
	require.Equal(t, "▁▂▄█", sparkline([]int64{0, 1, 50, 100}), "a day with a view is never drawn empty")
	require.Equal(t, "", sparkline(nil))
}

func TestChartAnalytics(t *testing.T) {
	an := &splathost.Analytics{SplatID: "s1", WindowDays: 3, Since: "2026-11-24",
		Totals: splathost.ViewCounts{Impressions: 7, UniqueViews: 3},
		Days: []splathost.AnalyticsDay{
			{Date: "2026-11-24"},
			{Date: "2026-11-25", ViewCounts: splathost.ViewCounts{Impressions: 6, UniqueViews: 2}},
			{Date: "2026-11-26", ViewCounts: splathost.ViewCounts{Impressions: 1, UniqueViews: 1}},
		}}
	var out bytes.Buffer
	require.NoError(t, chartAnalytics(&out, an))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Equal(t, []string{
		"splat s1, last 3 days (since 2026-11-24)",
		"impressions         7  ▁█▂  max 6 on 2026-11-25",
		"unique              3  ▁█▄  max 2 on 2026-11-25",
		"                       2026-11-24 … 2026-11-26",
	}, lines)
}

func TestCloneProgressPrintsEachNewCount(t *testing.T) {
	var out bytes.Buffer
	a := &app{stderr: &out}
	p := a.cloneProgress()
	for _, j := range []splathost.CloneJob{{JobID: "j1"}, {JobID: "j1"}, {JobID: "j1", TotalObjects: 4},
		{JobID: "j1", CopiedObjects: 2, TotalObjects: 4}, {JobID: "j1", CopiedObjects: 2, TotalObjects: 4}} {
		p(j)
	}
	require.Equal(t, "clone: job j1 started\nclone: 0/4 objects copied\nclone: 2/4 objects copied\n", out.String())
}
