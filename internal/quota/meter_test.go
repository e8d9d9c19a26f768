package quota

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

func ptr(v int64) *int64 { return &v }

// refusedBy is the status and the envelope's scope (and dimension) of err, "" for nil.
func refusedBy(t *testing.T, err error) (int, string, any) {
	t.Helper()
	if err == nil {
		return 0, "", nil
	}
	var e *apperr.Error
	require.True(t, errors.As(err, &e))
	return e.Status, e.Extra["scope"].(string), e.Extra["code"]
}

// TestCheck: the rule of a new charge (Reserve): the customer's caps before the account's,
// bytes before the slot, the account's bytes lifted by overage, and only what the charge adds
// is checked (a holder over a cap lowered later may still take a charge that adds nothing to
// that counter).
func TestCheck(t *testing.T) {
	cust := Meter{UsedBytes: 90, Splats: 2, LimitBytes: 100, MaxSplats: ptr(3)}
	acct := Meter{UsedBytes: 900, Splats: 9, LimitBytes: 1000, MaxSplats: ptr(10)}
	tests := []struct {
		name       string
		cust, acct Meter
		c          Charge
		status     int
		scope      string
		code       any
	}{
		{"fits exactly", cust, acct, Charge{Bytes: 10, Slot: true}, 0, "", nil},
		{"customer bytes", cust, acct, Charge{Bytes: 11}, http.StatusRequestEntityTooLarge, "customer", "STORAGE_QUOTA_EXCEEDED"},
		{"customer slot", Meter{Splats: 3, LimitBytes: 100, MaxSplats: ptr(3)}, acct, Charge{Slot: true}, http.StatusForbidden, "customer", "plan_limit"},
		{"customer first", cust, Meter{UsedBytes: 1000, LimitBytes: 1000}, Charge{Bytes: 11}, http.StatusRequestEntityTooLarge, "customer", "STORAGE_QUOTA_EXCEEDED"},
		{"account bytes", cust, Meter{UsedBytes: 995, LimitBytes: 1000}, Charge{Bytes: 10}, http.StatusRequestEntityTooLarge, "account", "STORAGE_QUOTA_EXCEEDED"},
		{"account overage", cust, Meter{UsedBytes: 995, LimitBytes: 1000, Overage: true}, Charge{Bytes: 10}, 0, "", nil},
		{"account slot", cust, Meter{Splats: 10, LimitBytes: 1000, MaxSplats: ptr(10)}, Charge{Slot: true}, http.StatusForbidden, "account", "plan_limit"},
		{"overage lifts no slot cap", cust, Meter{Splats: 10, LimitBytes: 1000, MaxSplats: ptr(10), Overage: true}, Charge{Slot: true}, http.StatusForbidden, "account", "plan_limit"},
		{"no bytes over a lowered byte cap", Meter{UsedBytes: 200, LimitBytes: 100}, acct, Charge{Slot: true}, 0, "", nil},
		{"no slot over a lowered slot cap", Meter{Splats: 5, LimitBytes: 100, MaxSplats: ptr(3)}, acct, Charge{Bytes: 1}, 0, "", nil},
		{"nil maxSplats is unlimited", Meter{Splats: 1 << 40, LimitBytes: 100}, Meter{Splats: 1 << 40, LimitBytes: 1000}, Charge{Slot: true}, 0, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, scope, code := refusedBy(t, Check(tt.cust, tt.acct, tt.c))
			require.Equal(t, tt.status, status)
			require.Equal(t, tt.scope, scope)
			require.Equal(t, tt.code, code)
		})
	}
}

// TestFits: the restore rule: after the charge every counter of both meters is within its cap,
// so a holder already over a cap gets nothing back, not even a charge adding nothing to it.
func TestFits(t *testing.T) {
	cust := Meter{UsedBytes: 90, Splats: 2, LimitBytes: 100, MaxSplats: ptr(3)}
	acct := Meter{UsedBytes: 900, Splats: 9, LimitBytes: 1000, MaxSplats: ptr(10)}
	require.True(t, Fits(cust, acct, Charge{Bytes: 10, Slot: true}), "exactly at every cap")
	require.False(t, Fits(cust, acct, Charge{Bytes: 11}), "customer bytes")
	require.False(t, Fits(Meter{Splats: 3, LimitBytes: 100, MaxSplats: ptr(3)}, acct, Charge{Slot: true}), "customer slots")
	require.False(t, Fits(cust, Meter{UsedBytes: 995, LimitBytes: 1000}, Charge{Bytes: 10}), "account bundle")
	require.True(t, Fits(cust, Meter{UsedBytes: 995, LimitBytes: 1000, Overage: true}, Charge{Bytes: 10}), "overage lifts the bundle")
	require.False(t, Fits(cust, Meter{Splats: 10, LimitBytes: 1000, MaxSplats: ptr(10), Overage: true}, Charge{Slot: true}), "but not the account's maxSplats")
	require.False(t, Fits(Meter{UsedBytes: 101, LimitBytes: 100}, acct, Charge{}), "over a cap: nothing back")
	require.False(t, Fits(cust, Meter{Splats: 11, LimitBytes: 1000, MaxSplats: ptr(10)}, Charge{Bytes: 1}), "account over its scene cap")
	require.True(t, Fits(Meter{UsedBytes: 1 << 50, Splats: 1 << 40, LimitBytes: 1 << 51}, Meter{LimitBytes: 1 << 51}, Charge{Slot: true}), "nil maxSplats")
}

// TestMeterArithmetic: a charge and a signed delta move both counters, a slot-less charge no
// scene count.
func TestMeterArithmetic(t *testing.T) {
	m := Meter{UsedBytes: 10, Splats: 1, LimitBytes: 100}
	require.Equal(t, Meter{UsedBytes: 15, Splats: 2, LimitBytes: 100}, m.Add(Charge{Bytes: 5, Slot: true}))
	require.Equal(t, Meter{UsedBytes: 15, Splats: 1, LimitBytes: 100}, m.Add(Charge{Bytes: 5}))
	require.Equal(t, Meter{UsedBytes: 3, Splats: 0, LimitBytes: 100}, m.Shift(Delta{Bytes: -7, Splats: -1}))
	require.Equal(t, Delta{Bytes: -2, Splats: 0}, Delta{Bytes: -7, Splats: -1}.Add(Charge{Bytes: 5, Slot: true}))
	require.True(t, Meter{UsedBytes: 100, LimitBytes: 100}.Within())
	require.False(t, Meter{UsedBytes: 101, LimitBytes: 100}.Within())
	require.True(t, Meter{UsedBytes: 101, LimitBytes: 100, Overage: true}.Within())
}
