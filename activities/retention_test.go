package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/workflows/contract"
)

func TestSceneObjectsStayInsideTheScenesIntegration(t *testing.T) {
	integ := "aaaaaaaaaaaaaaaaaaaaaaaa"
	folder := owner + "lod_folder/t1"
	rendition := RenditionFolder(integ, "dddddddddddddddddddddddd", "eeeeeeeeeeeeeeeeeeeeeeee")
	foreign := RenditionFolder("cccccccccccccccccccccccc", "dddddddddddddddddddddddd", "eeeeeeeeeeeeeeeeeeeeeeee")
	for _, tc := range []struct {
		name           string
		sc             ent.Scene
		keys, prefixes []string
	}{
		{"file", ent.Scene{IntegrationID: integ, AssetKeys: []string{owner + "splat_file/t1/a.splat", owner + "images/t2/thumb.webp"}},
			[]string{owner + "splat_file/t1/a.splat", owner + "images/t2/thumb.webp"}, nil},
		{"lod folder with or without its slash", ent.Scene{IntegrationID: integ, AssetKeys: []string{folder + "/lod-meta.json"}, LodFolderKey: &folder},
			[]string{folder + "/lod-meta.json"}, []string{folder + "/"}},
		{"foreign and malformed keys are dropped", ent.Scene{IntegrationID: integ,
			AssetKeys: []string{"i/cccccccccccccccccccccccc/u/x/splat_file/t/a.splat", owner + "../x", "i/" + integ + "/"}}, nil, nil},
		{"a folder that would list a whole integration is dropped", ent.Scene{IntegrationID: integ, LodFolderKey: &integ}, nil, nil},
		{"the rendition folder goes too", ent.Scene{IntegrationID: integ, AssetKeys: []string{owner + "splat_file/t1/a.ply"}, RenditionPrefix: &rendition},
			[]string{owner + "splat_file/t1/a.ply"}, []string{rendition}},
		{"a rendition folder of another integration is dropped", ent.Scene{IntegrationID: integ, RenditionPrefix: &foreign}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, prefixes := SceneObjects(&tc.sc)
			require.Equal(t, tc.keys, keys)
			require.Equal(t, tc.prefixes, prefixes)
		})
	}
}

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
