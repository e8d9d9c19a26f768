package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Temporal's embedded Postgres schemas (go.temporal.io/server/schema), applied by its own
// schema tool: the versioning tables at 0.0, then every versioned step up to the newest.
var pgSchemas = map[string]string{
	pgDatabase:           "postgresql/v12/temporal",
	pgVisibilityDatabase: "postgresql/v12/visibility",
}

// prepareSQLite creates the schema of a fresh database file and registers the namespace.
func prepareSQLite(o nodeOptions, logger log.Logger) error {
	if _, err := os.Stat(o.sqlite); errors.Is(err, fs.ErrNotExist) {
		// Built in a side file and renamed into place: a run interrupted half way must not
		// leave a database that later runs take for complete.
		tmp := o.sqlite + ".init"
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(tmp + suffix)
		}
		logger.Info("creating the temporal database " + o.sqlite)
		if err := sqliteschema.SetupSchema(sqliteConfig(tmp, false)); err != nil {
			return fmt.Errorf("create schema in %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, o.sqlite); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	return registerNamespace(o, sqliteConfig(o.sqlite, true))
}

// setupPostgres creates the two databases when missing, brings their schemas to the newest
// version and registers the namespace. Every step is a no-op when already done, so it runs
// before every start of the cluster.
func setupPostgres(o nodeOptions, logger log.Logger) error {
	def, vis, err := o.sqlConfigs()
	if err != nil {
		return err
	}
	for _, c := range []*config.SQL{def, vis} {
		create := *c
		if err := sqltool.DoCreateDatabase(&create, "postgres", logger); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("create database %s: %w", c.DatabaseName, err)
		}
		conn, err := sqltool.NewConnection(c, logger)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", c.DatabaseName, err)
		}
		err = schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run()
		if err == nil {
			err = schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{SchemaName: pgSchemas[c.DatabaseName]}, logger).Run()
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("schema of %s: %w", c.DatabaseName, err)
		}
	}
	return registerNamespace(o, def)
}

// registerNamespace creates the namespace with its custom Keyword search attributes, straight
// in the database before any frontend runs, so clients never wait for a namespace cache
// refresh. A no-op when the namespace exists, so a restart keeps its settings.
func registerNamespace(o nodeOptions, c *config.SQL) error {
	if o.namespace == "" {
		return nil
	}
	attrs := make(map[string]enumspb.IndexedValueType, len(o.searchAttributes))
	for _, name := range o.searchAttributes {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.namespace, false, attrs)
	if err != nil {
		return fmt.Errorf("namespace config: %w", err)
	}
	ns.Detail.Config.Retention = durationpb.New(o.retention)
	if err := sqliteschema.CreateNamespaces(c, ns); err != nil {
		return fmt.Errorf("register namespace %s: %w", o.namespace, err)
	}
	return nil
}
