package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/workflows"
)

func cands(integ string, n int) []candidate {
	out := make([]candidate, n)
	for i := range out {
		out[i] = candidate{RenditionInput: workflows.RenditionInput{SceneID: integ + string(rune('a'+i)), IntegrationID: integ}, rank: i + 1}
	}
	return out
}

func scenesOf(cs []candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.SceneID
	}
	return out
}

// TestPickFairGivesTheFreePlaceToTheIntegrationWithFewestInFlight: an integration with a
// backlog and every place in flight does not take the one place that frees up when another
// integration has a scene waiting.
func TestPickFairGivesTheFreePlaceToTheIntegrationWithFewestInFlight(t *testing.T) {
	all := append(cands("A", 3), cands("B", 1)...)
	got := pickFair(map[string]int{"A": 3}, all, 1)
	require.Equal(t, []string{"Ba"}, scenesOf(got))
}

// TestPickFairTakesTurns: with nothing in flight, integrations alternate, each oldest first, and
// an integration without candidates leaves its share to the others.
func TestPickFairTakesTurns(t *testing.T) {
	all := append(append(cands("A", 4), cands("B", 2)...), cands("C", 1)...)
	got := pickFair(nil, all, 6)
	require.Equal(t, []string{"Aa", "Ba", "Ca", "Ab", "Bb", "Ac"}, scenesOf(got))
	require.Len(t, pickFair(nil, cands("A", 2), 5), 2, "never more than the candidates")
	require.Empty(t, pickFair(nil, cands("A", 2), 0))
}

func TestDispatchWindow(t *testing.T) {
	require.Equal(t, 4, dispatchWindow(0, 1))
	require.Equal(t, 10, dispatchWindow(0, 4))
	require.Equal(t, 3, dispatchWindow(3, 4))
}
