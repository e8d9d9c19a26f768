package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

func TestViewActivitiesRefuseBadInput(t *testing.T) {
	env, a := newEnv(t, nil)
	tooMany := make([]string, contract.MaxViewDeletion+1)
	for i := range tooMany {
		tooMany[i] = "aaaaaaaaaaaaaaaaaaaaaaaa"
	}
	for _, run := range []func() error{
		func() error { _, err := env.ExecuteActivity(a.DeleteViews, contract.DeleteViewsInput{}); return err },
		func() error {
			_, err := env.ExecuteActivity(a.DeleteViews, contract.DeleteViewsInput{SceneIDs: tooMany})
			return err
		},
		func() error {
			_, err := env.ExecuteActivity(a.DropExpiredViews, contract.DropExpiredViewsInput{})
			return err
		},
	} {
		var app *temporal.ApplicationError
		require.ErrorAs(t, run(), &app)
		require.Equal(t, contract.ErrBadInput, app.Type())
		require.True(t, app.NonRetryable())
	}
}
