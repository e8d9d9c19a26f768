package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

func TestRetentionActivitiesRefuseBadInput(t *testing.T) {
	env, a := newEnv(t, nil)
	for _, in := range []contract.PurgeArchivedSceneInput{{}, {SceneID: "x", IntegrationID: "y"}, {SceneID: "x", ArchivedAt: time.Now()}} {
		_, err := env.ExecuteActivity(a.PurgeArchivedScene, in)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		require.Equal(t, contract.ErrBadInput, app.Type())
	}
	_, err := env.ExecuteActivity(a.ArchivedScenes, contract.ArchivedScenesInput{})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, contract.ErrBadInput, app.Type())
}
