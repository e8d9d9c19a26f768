// Package customers is the user service's domain without HTTP: an integration's customers
// (external users) with their billing lifecycle and deletion, the operator's accounts and
// integrations, and the integration's webhook endpoints. Rules are plain functions over plain
// values (PlanLifecycle, AccountPatch.Apply, ...), unit-tested without Postgres; the
// transactional operations are methods of Store, which reads and locks the rows, runs the
// rules and writes what they decided, with the counters written through internal/quota.
// services/user parses a request, calls one Store method and renders its result.
package customers

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/splathost/splathost/ent"
	"github.com/splathost/splathost/internal/credentials"
	"github.com/splathost/splathost/internal/db"
	"github.com/splathost/splathost/internal/events"
)

// Store runs the user domain's transactions over the product database. Events writes the
// webhook events of a transaction into its outbox (the caller flushes them after the commit).
type Store struct {
	DB     *db.DB
	Events *events.Outbox
}

// Key names one customer: the integration (with its account) and the external user id.
type Key struct {
	IntegrationID, AccountID, ExternalUserID string
}

// txAttempts is how often a customer transaction runs when Postgres aborts it for a deadlock.
const txAttempts = 3

// inTxRetry runs fn in a transaction, again (up to txAttempts) when Postgres aborted it for a
// deadlock or a serialization failure: a PUT or DELETE of a customer locks many scene rows
// while scene writers lock one scene and then the customer.
func (s *Store) inTxRetry(ctx context.Context, fn func(tx *ent.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.DB.InTx(ctx, fn)
		if err == nil || attempt == txAttempts || !retryable(err) {
			return err
		}
	}
}

// retryable reports a transaction Postgres aborted for a deadlock or a serialization failure;
// running it again is safe.
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}

// notifyIntegration tells every process to drop its cached integrations. NOTIFY inside the
// transaction is delivered only if it commits, so no process sees the news before the row.
func notifyIntegration(ctx context.Context, tx *ent.Tx, id string) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", credentials.Channel, id)
	return err
}

// notifyCustomer tells every process to drop the cached status of one customer (sessions
// scoped to the customer check it at every use). Delivered only if tx commits.
func notifyCustomer(ctx context.Context, tx *ent.Tx, integrationID, eu string) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", credentials.Channel, credentials.CustomerNotice(integrationID, eu))
	return err
}
