package routes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A prefix belongs to one service: the gateway could not tell where a second owner's requests go.
func TestPrefixesHaveOneOwner(t *testing.T) {
	owner := map[string]string{}
	for name, table := range map[string][]string{"user": User, "scene": append(Scene, ScenePublic...), "session": Session} {
		for _, p := range table {
			require.NotContains(t, owner, p, "%s is %s's and %s's", p, owner[p], name)
			owner[p] = name
		}
	}
	require.Len(t, owner, len(User)+len(Scene)+len(ScenePublic)+len(Session))
}
