// Package ent holds the generated data-access code of the one schema the services share.
package ent

//go:generate go run entgo.io/ent/cmd/ent generate --feature sql/versioned-migration,sql/lock,sql/upsert,sql/execquery,sql/modifier ./schema
