package customers

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/internal/apperr"
)

// TestAccountPatchOverageRule: overage is checked against the plan the account has after the
// patch, whichever of the two fields the patch names.
func TestAccountPatchOverageRule(t *testing.T) {
	yes, no := true, false
	pro, ent := "pro", "enterprise"
	tests := []struct {
		name    string
		cur     Account
		p       AccountPatch
		wantErr bool
	}{
		{"overage on a pro account", Account{Plan: "pro"}, AccountPatch{Overage: &yes}, true},
		{"overage with the move to enterprise", Account{Plan: "pro"}, AccountPatch{Overage: &yes, Plan: &ent}, false},
		{"overage on an enterprise account", Account{Plan: "enterprise"}, AccountPatch{Overage: &yes}, false},
		{"down to pro keeping overage", Account{Plan: "enterprise", Overage: true}, AccountPatch{Plan: &pro}, true},
		{"down to pro dropping overage", Account{Plan: "enterprise", Overage: true}, AccountPatch{Plan: &pro, Overage: &no}, false},
		{"a name change of a free account", Account{Plan: "free"}, AccountPatch{Name: &pro}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.cur
			err := tt.p.Apply(&a)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			var e *apperr.Error
			require.True(t, errors.As(err, &e))
			require.Equal(t, 400, e.Status)
			require.Equal(t, []string{"overage: only the enterprise plan supports overage"}, e.Issues)
		})
	}
}

// TestAccountPatchFields: supplied fields are written, omitted ones kept, a null maxSplats
// clears the cap.
func TestAccountPatchFields(t *testing.T) {
	name, bundle, max := "B", int64(500), int64(7)
	cur := Account{Name: "A", Plan: "pro", StorageBundleBytes: 100, MaxSplats: &max}
	a := cur
	require.NoError(t, (&AccountPatch{Name: &name, StorageBundleBytes: &bundle}).Apply(&a))
	require.Equal(t, Account{Name: "B", Plan: "pro", StorageBundleBytes: 500, MaxSplats: &max}, a)
	require.NoError(t, (&AccountPatch{ClearMax: true}).Apply(&a))
	require.Nil(t, a.MaxSplats)
	nine := int64(9)
	require.NoError(t, (&AccountPatch{MaxSplats: &nine}).Apply(&a))
	require.Equal(t, int64(9), *a.MaxSplats)
}

// TestIntegrationPatch: supplied fields are written, omitted ones kept; a null frameAncestors
// clears the list, an empty one sets it empty.
func TestIntegrationPatch(t *testing.T) {
	off := false
	cur := Integration{ProductSlug: "a.example", Capabilities: []string{"viewer"}, RestAccess: true,
		FrameAncestors: []string{"'self'"}}
	in := cur
	(&IntegrationPatch{RestAccess: &off}).Apply(&in)
	require.Equal(t, Integration{ProductSlug: "a.example", Capabilities: []string{"viewer"}, FrameAncestors: []string{"'self'"}}, in)
	(&IntegrationPatch{ProductSlug: "b.example", Capabilities: []string{"editor"}, HasFrames: true, FrameAncestors: []string{}}).Apply(&in)
	require.Equal(t, "b.example", in.ProductSlug)
	require.Equal(t, []string{"editor"}, in.Capabilities)
	require.Equal(t, []string{}, in.FrameAncestors)
	(&IntegrationPatch{ClearFrames: true}).Apply(&in)
	require.Nil(t, in.FrameAncestors)
}
