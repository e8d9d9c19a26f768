package ids

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewIsTwentyFourHexAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		id := New()
		require.Regexp(t, `^[0-9a-f]{24}$`, id)
		require.True(t, Valid(id))
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
}

func TestNewStartsWithTheTime(t *testing.T) {
	b, err := hex.DecodeString(New()[:8])
	require.NoError(t, err)
	sec := int64(b[0])<<24 | int64(b[1])<<16 | int64(b[2])<<8 | int64(b[3])
	require.InDelta(t, time.Now().Unix(), sec, 2)
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"0123456789abcdef01234567":  true,
		"0123456789ABCDEF01234567":  true,
		"0123456789abcdef0123456":   false,
		"0123456789abcdef012345678": false,
		"0123456789abcdeg01234567":  false,
		"":                          false,
		"../../../../etc/passwd00":  false,
	} {
		require.Equal(t, want, Valid(s), s)
	}
}
