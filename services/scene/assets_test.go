package scene

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyKind: an upload's key and a clone's copy of it have the same upload kind; what is no
// key of the layout has none.
func TestKeyKind(t *testing.T) {
	require.Equal(t, kindAudio, keyKind("i/I/u/O/"+kindAudio+"/T/a.mp3"))
	require.Equal(t, kindAudio, keyKind("i/I/u/O/clone/J/"+kindAudio+"/T/a.mp3"))
	for _, k := range []string{"i/I/u/O/clone/J/a.mp3", "i/I/u/O/" + kindAudio + "/T", "i/I/u/O/" + kindAudio + "/../a.mp3", "x/" + kindAudio + "/T/a/b/c.mp3"} {
		require.Equal(t, "", keyKind(k), k)
	}
}
