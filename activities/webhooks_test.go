package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/workflows/contract"
)

// An attempt the domain code calls invalid (here: no delivery id) fails for good, as the
// workflow expects of bad input, not retried.
func TestAttemptWebhookDeliveryRefusesBadInput(t *testing.T) {
	env, a := newEnv(t, nil)
	_, err := env.ExecuteActivity(a.AttemptWebhookDelivery, contract.AttemptWebhookInput{})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, contract.ErrBadInput, app.Type())
	require.True(t, app.NonRetryable())
	require.Contains(t, app.Error(), "delivery id is required")
}
