package media

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/config"
)

// fakeNode writes an executable that prints version as `node --version` does.
func fakeNode(t *testing.T, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho "+version+"\n"), 0o700))
	return p
}

// TestNodeVersionRefusesOlderThanEngines: the converter's engines say node >= 22; an older node
// (Debian's 18 or 20) is refused with a line that says what to do, a 22 or later is accepted.
func TestNodeVersionRefusesOlderThanEngines(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"v18.19.0", "v20.20.2", "garbage"} {
		_, err := NodeVersion(ctx, fakeNode(t, v))
		require.ErrorContains(t, err, "run `make deps`", v)
		require.ErrorContains(t, err, "SPLATHOST_NODE", v)
	}
	for _, v := range []string{"v22.23.3", "v24.1.0"} {
		got, err := NodeVersion(ctx, fakeNode(t, v))
		require.NoError(t, err, v)
		require.Equal(t, v, got)
	}
}

// TestFindNodePrefersPinned: without SPLATHOST_NODE the media worker runs the Node `make deps`
// pinned under media/node-runtime, not whichever node comes first on PATH; a configured path
// that does not exist is an error naming the setting.
func TestFindNodePrefersPinned(t *testing.T) {
	p, err := FindNode("")
	require.NoError(t, err)
	require.Contains(t, p, filepath.FromSlash(pinnedNode), "run make deps")
	v, err := NodeVersion(context.Background(), p)
	require.NoError(t, err)
	t.Logf("the converter runs on node %s (%s)", v, p)

	_, err = FindNode(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "SPLATHOST_NODE")
}

// TestConverterRunsOnItsNode: the media worker's converter starts on the node SPLATHOST_NODE
// names, and a media worker given one older than the converter's engines refuses to start
// with a line saying what to do, instead of converting on an unsupported Node.
func TestConverterRunsOnItsNode(t *testing.T) {
	ctx := context.Background()
	_, err := Converter(ctx, config.Config{Node: fakeNode(t, "v20.20.2")})
	require.ErrorContains(t, err, "older than splat-transform "+SplatTransformVersion+" needs (>= 22): run `make deps`")

	node, err := FindNode("")
	require.NoError(t, err)
	tr, err := Converter(ctx, config.Config{Node: node})
	require.NoError(t, err)
	require.Equal(t, node, tr.Node)
}
