//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	entscene "github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/internal/embedsql"
	"github.com/splathost/splathost/internal/scenes"
)

// TestEmbedVisibilityRuleMatchesSQL ties the embed visibility rule's two forms together: the
// SQL the view and like statements run (embedsql.VisibleScene) and the Go the embed reads and
// the room run (scenes.VisibleToEmbed) answer alike for every combination of integration,
// owner, visibility, allowEmbed and archival, for a guest and for customers. The rows are fed
// to Postgres as values of the scenes table's own row type (jsonb_populate_recordset), so the
// columns' real types decide and no row has to be inserted.
func TestEmbedVisibilityRuleMatchesSQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, env.Config.PostgresURL)
	require.NoError(t, err)
	defer pool.Close()

	archivedAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type row struct {
		ID            string     `json:"id"`
		IntegrationID string     `json:"integration_id"`
		OwnerID       string     `json:"owner_id"`
		Visibility    string     `json:"visibility"`
		AllowEmbed    bool       `json:"allow_embed"`
		ArchivedAt    *time.Time `json:"archived_at"`
	}
	var rows []row
	for _, in := range []string{"I", "J"} {
		for _, owner := range []string{"O", "P"} {
			for _, v := range []entscene.Visibility{entscene.VisibilityPublic, entscene.VisibilityPrivate} {
				for _, embed := range []bool{true, false} {
					for _, archived := range []*time.Time{nil, &archivedAt} {
						rows = append(rows, row{ID: fmt.Sprintf("%024x", len(rows)+1), IntegrationID: in, OwnerID: owner,
							Visibility: string(v), AllowEmbed: embed, ArchivedAt: archived})
					}
				}
			}
		}
	}
	feed, err := json.Marshal(rows)
	require.NoError(t, err)
	query := `SELECT count(*) FROM jsonb_populate_recordset(NULL::scenes, $4::jsonb) s WHERE ` + embedsql.VisibleScene

	seen := 0
	for _, r := range rows {
		sc := &ent.Scene{ID: r.ID, IntegrationID: r.IntegrationID, OwnerID: r.OwnerID, Visibility: entscene.Visibility(r.Visibility),
			AllowEmbed: r.AllowEmbed, ArchivedAt: r.ArchivedAt}
		// A guest (owner ""), the scene's owner, another customer, each of integration I.
		for _, viewer := range []string{"", "O", "P"} {
			var n int
			require.NoError(t, pool.QueryRow(ctx, query, r.ID, "I", viewer, string(feed)).Scan(&n))
			goSays := scenes.VisibleToEmbed(sc, "I", viewer)
			require.Equal(t, n == 1, goSays, "row %+v, viewer %q: SQL and Go disagree", r, viewer)
			if goSays {
				seen++
			}
		}
	}
	require.NotZero(t, seen, "some rows are visible, so agreement is not both saying no")
}
