package main

import (
	"bytes"
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
	q, local := visibilityQuery("i1", `o'brien`, "clone")
	require.Equal(t, `integrationId = 'i1' AND externalUserId = 'o\'brien' AND WorkflowType = 'CloneScene'`, q)
	require.Empty(t, local)
	q, local = visibilityQuery("i1", `back\slash`, "Custom")
	require.Equal(t, `integrationId = 'i1' AND WorkflowType = 'Custom'`, q)
	require.Equal(t, `back\slash`, local, "matched on the rows instead")
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
	feed(newProgressBar(&out, false))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.LessOrEqual(t, len(lines), 12)
	require.Equal(t, "upload: 100%  2.0 KiB/2.0 KiB  20/20 files", lines[len(lines)-1])
	require.Equal(t, 1, strings.Count(out.String(), "20/20 files"), "the final line once")
	require.NotContains(t, out.String(), "\r")
}

func TestTerminalProgressRedrawsOneLine(t *testing.T) {
	var out bytes.Buffer
	feed(newProgressBar(&out, true))
	s := out.String()
	require.True(t, strings.HasPrefix(s, "\r["), s)
	require.Equal(t, 1, strings.Count(s, "\n"), "one line, ended by finish")
	require.True(t, strings.HasSuffix(s, "\r[##############################] 100%  2.0 KiB/2.0 KiB  20/20 files\n"), s)
}

func TestSize(t *testing.T) {
	require.Equal(t, "512 B", size(512))
	require.Equal(t, "1.5 KiB", size(1536))
	require.Equal(t, "3.0 GiB", size(3<<30))
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
