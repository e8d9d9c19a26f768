package objectkeys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// scene holds the fields of a scene row that SceneObjects reads.
type scene struct {
	IntegrationID   string
	AssetKeys       []string
	LodFolderKey    *string
	RenditionPrefix *string
}

// TestSceneObjectsStayInsideTheScenesIntegration: a scene's objects are its asset keys and LOD
// folder with their sealed copies, and its rendition folder, never anything outside its integration or broader than a folder.
func TestSceneObjectsStayInsideTheScenesIntegration(t *testing.T) {
	integ := "aaaaaaaaaaaaaaaaaaaaaaaa"
	owner := "i/aaaaaaaaaaaaaaaaaaaaaaaa/u/bbbbbbbbbbbbbbbbbbbbbbbb/"
	folder := owner + "lod_folder/t1"
	rendition := RenditionFolder(integ, "dddddddddddddddddddddddd", "eeeeeeeeeeeeeeeeeeeeeeee")
	foreign := RenditionFolder("cccccccccccccccccccccccc", "dddddddddddddddddddddddd", "eeeeeeeeeeeeeeeeeeeeeeee")
	for _, tc := range []struct {
		name           string
		sc             scene
		keys, prefixes []string
	}{
		{"file", scene{IntegrationID: integ, AssetKeys: []string{owner + "splat_file/t1/a.splat", owner + "images/t2/thumb.webp"}},
			[]string{owner + "splat_file/t1/a.splat", owner + "sealed-splat_file/t1/a.splat", owner + "images/t2/thumb.webp", owner + "sealed-images/t2/thumb.webp"}, nil},
		{"lod folder with or without its slash", scene{IntegrationID: integ, AssetKeys: []string{folder + "/lod-meta.json"}, LodFolderKey: &folder},
			[]string{folder + "/lod-meta.json", owner + "sealed-lod_folder/t1/lod-meta.json"}, []string{folder + "/", owner + "sealed-lod_folder/t1/"}},
		{"foreign and malformed keys are dropped", scene{IntegrationID: integ,
			AssetKeys: []string{"i/cccccccccccccccccccccccc/u/x/splat_file/t/a.splat", owner + "../x", "i/" + integ + "/"}}, nil, nil},
		{"a folder that would list a whole integration is dropped", scene{IntegrationID: integ, LodFolderKey: &integ}, nil, nil},
		{"the rendition folder goes too", scene{IntegrationID: integ, AssetKeys: []string{owner + "splat_file/t1/a.ply"}, RenditionPrefix: &rendition},
			[]string{owner + "splat_file/t1/a.ply", owner + "sealed-splat_file/t1/a.ply"}, []string{rendition}},
		{"a rendition folder of another integration is dropped", scene{IntegrationID: integ, RenditionPrefix: &foreign}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, prefixes := SceneObjects(tc.sc.IntegrationID, tc.sc.AssetKeys, tc.sc.LodFolderKey, tc.sc.RenditionPrefix)
			require.Equal(t, tc.keys, keys)
			require.Equal(t, tc.prefixes, prefixes)
		})
	}
}
