package scenerow

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/ent/scene"
	"github.com/splathost/splathost/ent/schema"
)

// The builder only fills a mutation, so the test reads the mutation back without a database.
func TestCreateSetsEveryGivenColumn(t *testing.T) {
	lod, files, depth := "i/x/u/y/lod/z/", 7, "https://cdn/depth.png"
	n := New{ID: "scene1", IntegrationID: "int1", OwnerID: "cust1", Title: "t", Description: "d",
		Visibility: scene.VisibilityPublic, SplatType: "lod", SplatURL: "https://cdn/s/", LodFolderKey: &lod,
		LodFiles: &files, ImageURL: "https://cdn/i.png", ThumbnailDepthURL: &depth,
		InitialCameraPosition: []float64{1, 2, 3}, InitialCameraRotation: []float64{4, 5, 6},
		LevelData: map[string]any{"version": 1}, RemixedFrom: &schema.RemixedFrom{SplatID: "src"},
		FileSizeBytes: 42, AssetKeys: []string{"k"}, RenditionPrefix: "i/int1/u/cust1/rendition/scene1/",
		ProcessingMessage: "note"}
	m := Create(ent.NewClient().Scene, n).Mutation()
	id, _ := m.ID()
	require.Equal(t, "scene1", id)
	get := func(v any, ok bool) any { require.True(t, ok); return v }
	require.Equal(t, "int1", get(m.IntegrationID()))
	require.Equal(t, "cust1", get(m.OwnerID()))
	require.Equal(t, "t", get(m.Title()))
	require.Equal(t, "d", get(m.Description()))
	require.Equal(t, scene.VisibilityPublic, get(m.Visibility()))
	require.Equal(t, scene.SplatTypeLod, get(m.SplatType()))
	require.Equal(t, "https://cdn/s/", get(m.SplatURL()))
	require.Equal(t, lod, get(m.LodFolderKey()))
	require.Equal(t, files, get(m.LodFiles()))
	require.Equal(t, "https://cdn/i.png", get(m.ImageURL()))
	require.Equal(t, depth, get(m.ThumbnailDepthURL()))
	require.Equal(t, []float64{1, 2, 3}, get(m.InitialCameraPosition()))
	require.Equal(t, []float64{4, 5, 6}, get(m.InitialCameraRotation()))
	require.Equal(t, map[string]any{"version": 1}, get(m.LevelData()))
	require.Equal(t, &schema.RemixedFrom{SplatID: "src"}, get(m.RemixedFrom()))
	require.Equal(t, int64(42), get(m.FileSizeBytes()))
	require.Equal(t, []string{"k"}, get(m.AssetKeys()))
	require.Equal(t, scene.ProcessingStatePending, get(m.ProcessingState()))
	require.Equal(t, n.RenditionPrefix, get(m.RenditionPrefix()))
	require.Equal(t, "note", get(m.ProcessingMessage()))
}

// What is absent stays unset, so the column keeps its default (NULL, skipped, a generated id).
func TestCreateLeavesAbsentColumnsToTheirDefaults(t *testing.T) {
	m := Create(ent.NewClient().Scene, New{IntegrationID: "int1", OwnerID: "cust1", Title: "t",
		Visibility: scene.VisibilityPrivate, SplatType: "file", SplatURL: "https://cdn/s.ply"}).Mutation()
	_, ok := m.ID()
	require.False(t, ok, "id")
	for name, set := range map[string]bool{
		"lod_folder_key":          func() bool { _, ok := m.LodFolderKey(); return ok }(),
		"lod_files":               func() bool { _, ok := m.LodFiles(); return ok }(),
		"thumbnail_depth_url":     func() bool { _, ok := m.ThumbnailDepthURL(); return ok }(),
		"initial_camera_position": func() bool { _, ok := m.InitialCameraPosition(); return ok }(),
		"initial_camera_rotation": func() bool { _, ok := m.InitialCameraRotation(); return ok }(),
		"level_data":              func() bool { _, ok := m.LevelData(); return ok }(),
		"remixed_from":            func() bool { _, ok := m.RemixedFrom(); return ok }(),
		"processing_state":        func() bool { _, ok := m.ProcessingState(); return ok }(),
		"rendition_prefix":        func() bool { _, ok := m.RenditionPrefix(); return ok }(),
		"processing_message":      func() bool { _, ok := m.ProcessingMessage(); return ok }(),
	} {
		require.False(t, set, name)
	}
}
