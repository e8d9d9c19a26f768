package migrate

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/splathost/splathost/ent/migrate/migrations"
)

func copyFS(t *testing.T) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		out[path] = &fstest.MapFile{Data: b}
		return err
	}))
	return out
}

func TestCommittedMigrationsMatchTheirChecksum(t *testing.T) {
	files, err := load(migrations.FS)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for i := 1; i < len(files); i++ {
		require.Less(t, files[i-1].Version(), files[i].Version(), "versions are ordered")
	}
}

func TestEditedMigrationIsRefused(t *testing.T) {
	m := copyFS(t)
	for name, f := range m {
		if name != "atlas.sum" {
			f.Data = append(append([]byte{}, f.Data...), []byte("\n-- sneaky edit\n")...)
			break
		}
	}
	_, err := load(m)
	require.ErrorContains(t, err, "atlas.sum")
}

func TestMissingChecksumIsRefused(t *testing.T) {
	m := copyFS(t)
	delete(m, "atlas.sum")
	_, err := load(m)
	require.Error(t, err)
}
