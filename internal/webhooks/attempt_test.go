package webhooks

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The column holds 500 bytes: a longer message is cut on a rune boundary and marked, a message
// that fits is kept as it is.
func TestTrimErrorFitsTheColumn(t *testing.T) {
	require.Equal(t, "refused", trimError("refused"))
	exact := strings.Repeat("a", maxError)
	require.Equal(t, exact, trimError(exact))
	for _, long := range []string{strings.Repeat("a", 600), strings.Repeat("é", 300), "a" + strings.Repeat("€", 200)} {
		got := trimError(long)
		require.LessOrEqual(t, len(got), maxError)
		require.True(t, utf8.ValidString(got), "cut inside a rune")
		require.True(t, strings.HasSuffix(got, "…"))
		require.Greater(t, len(got), maxError-len("…")-utf8.UTFMax)
	}
}
