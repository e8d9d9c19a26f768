package quota

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentUsed(t *testing.T) {
	tests := []struct {
		used, limit int64
		want        float64
	}{
		{0, 0, 0},
		{5, 0, 0},
		{5, -1, 0},
		{0, 100, 0},
		{50, 100, 50},
		{100, 100, 100},
		{150, 100, 100},
		{1 << 40, 1, 100},
		{-5, 100, 0},
		{1, 3, 33.33},
		{2, 3, 66.67},
		{1, 8, 12.5},
		{1, 1_000_000, 0},
		{1, 20_000, 0.01},
		{1 << 61, 1 << 62, 50},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.used, tt.limit), func(t *testing.T) {
			got := PercentUsed(tt.used, tt.limit)
			require.Equal(t, tt.want, got)
			require.GreaterOrEqual(t, got, 0.0)
			require.LessOrEqual(t, got, 100.0)
		})
	}
}

func TestSnapshotOf(t *testing.T) {
	tests := []struct {
		used, limit, remaining int64
		percent                float64
	}{
		{0, 0, 0, 0},
		{0, 1000, 1000, 0},
		{250, 1000, 750, 25},
		{1000, 1000, 0, 100},
		{1001, 1000, 0, 100},
		{1500, 1000, 0, 100},
		{10, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.used, tt.limit), func(t *testing.T) {
			require.Equal(t, Snapshot{UsedBytes: tt.used, LimitBytes: tt.limit,
				RemainingBytes: tt.remaining, PercentUsed: tt.percent}, SnapshotOf(tt.used, tt.limit))
		})
	}
}
