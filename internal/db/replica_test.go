package db

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseLSN reads Postgres's text form of WAL positions, which the standby watcher compares:
// the high half must weigh more than any low half, or a position after a 4 GiB boundary would
// read as older than one before it.
func TestParseLSN(t *testing.T) {
	for in, want := range map[string]uint64{"0/0": 0, "0/16B3748": 0x16B3748, "1/0": 1 << 32, "A/FFFFFFFF": 0xAFFFFFFFF} {
		got, err := parseLSN(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	a, _ := parseLSN("0/FFFFFFFF")
	b, _ := parseLSN("1/0")
	require.Less(t, a, b)
	for _, bad := range []string{"", "16B3748", "x/1", "1/", "1/100000000"} {
		_, err := parseLSN(bad)
		require.Error(t, err, bad)
	}
}
