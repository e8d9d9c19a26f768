package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splathost/splathost/internal/ids"
)

// Retention is how long a key is remembered (contract item 13: 24 h).
const Retention = 24 * time.Hour

// Lease is how long a claim binds its key without being renewed: the process running the
// request renews it every LeaseRenewal (Store.Hold), so a request may run as long as it needs,
// and a key whose holder died (kill -9, a lost connection) is free again within Lease.
const Lease = 6 * time.Second

// LeaseRenewal is how often a running request renews its claim.
const LeaseRenewal = 2 * time.Second

// Purge bounds: each process deletes expired keys at most once per purgeEvery, in batches that
// keep one statement short.
const (
	purgeEvery = 10 * time.Minute
	purgeBatch = 5000
)

// Scope is what makes two requests "the same request" apart from their body: integration, EU,
// method, path and the key itself.
type Scope struct {
	IntegrationID  string
	ExternalUserID string
	Method         string
	Path           string
	Key            string
}

// digest is SHA-256 over the scope's fields, each prefixed with its length so that no two
// scopes share a digest by moving bytes across a field boundary.
func (s Scope) digest() []byte {
	h := sha256.New()
	for _, f := range []string{s.IntegrationID, s.ExternalUserID, s.Method, s.Path, s.Key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// Outcome is what a claim found.
type Outcome int

const (
	// Owned: this request holds the key and runs; Finish or Release it afterwards.
	Owned Outcome = iota
	// Replay: the key answered before with the same body; Answer holds that answer.
	Replay
	// Reused: the key was used with another body.
	Reused
	// InUse: the first request with this key and body still runs.
	InUse
)

// Answer is a stored response.
type Answer struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// Claim is the result of Store.Claim.
type Claim struct {
	Outcome Outcome
	// Answer is set for Replay.
	Answer Answer
	scope  []byte
	lease  string
	// created is when the key was first claimed (kept across takeovers of a dead holder's lease).
	created time.Time
}

// Store keeps the keys in Postgres, so that every gateway process sees every key. It uses pgx
// directly: a claim is one INSERT … ON CONFLICT on the hot path of every covered request.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// lastPurge is when this process last started a purge (unix ns).
	lastPurge atomic.Int64
}

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool, log *slog.Logger) *Store {
	if log == nil {
		log = slog.Default()
	}
	return &Store{pool: pool, log: log}
}

// claimSQL inserts the key as running, or takes over a row that no longer binds: one older than
// the retention, one released after a 5xx (an empty lease), or one whose first request died holding
// it (lease over) when the body is the same. A takeover within the retention keeps the row's
// first claim time, which StableID derives from. RETURNING yields a row only when this request
// now holds the key.
const claimSQL = `
INSERT INTO idempotency_keys AS k (id, integration_id, external_user_id, method, path, key, scope,
	request_hash, lease, locked_until, status, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $1, now() + $9 * interval '1 millisecond', 0, now())
ON CONFLICT (scope) DO UPDATE SET request_hash = EXCLUDED.request_hash, lease = EXCLUDED.lease,
	locked_until = EXCLUDED.locked_until, status = 0, response_headers = NULL, response_body = NULL,
	created_at = CASE WHEN k.created_at <= now() - $10 * interval '1 millisecond' THEN EXCLUDED.created_at ELSE k.created_at END
WHERE k.created_at <= now() - $10 * interval '1 millisecond'
	OR (k.status = 0 AND k.lease = '')
	OR (k.status = 0 AND k.locked_until < now() AND k.request_hash = EXCLUDED.request_hash)
RETURNING k.lease, k.created_at`

// Claim records that a request with scope s and body hash bodyHash starts, or reports what an
// earlier request with the same scope left.
func (st *Store) Claim(ctx context.Context, s Scope, bodyHash []byte) (Claim, error) {
	st.maybePurge()
	scope := s.digest()
	// A row found by the SELECT may be released (a 5xx) before it is read: claim again.
	for range 3 {
		lease := ids.New()
		var got string
		var created time.Time
		err := st.pool.QueryRow(ctx, claimSQL, lease, s.IntegrationID, s.ExternalUserID, s.Method, s.Path, s.Key,
			scope, bodyHash, Lease.Milliseconds(), Retention.Milliseconds()).Scan(&got, &created)
		if err == nil {
			return Claim{Outcome: Owned, scope: scope, lease: got, created: created}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Claim{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		var (
			hash    []byte
			status  int
			headers map[string]string
			body    []byte
		)
		err = st.pool.QueryRow(ctx, `SELECT request_hash, status, response_headers, response_body
			FROM idempotency_keys WHERE scope = $1`, scope).Scan(&hash, &status, &headers, &body)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return Claim{}, fmt.Errorf("read idempotency key: %w", err)
		}
		switch {
		case string(hash) != string(bodyHash):
			return Claim{Outcome: Reused}, nil
		case status == 0:
			return Claim{Outcome: InUse}, nil
		}
		return Claim{Outcome: Replay, Answer: Answer{Status: status, Headers: headers, Body: body}}, nil
	}
	return Claim{}, errors.New("claim idempotency key: the key kept changing hands")
}

// Finish stores the answer of an owned claim for replays, unless the service already recorded
// it with its effect (Record), which is then the answer kept.
func (st *Store) Finish(ctx context.Context, c Claim, a Answer) error {
	_, err := st.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $3, response_headers = $4, response_body = $5,
		locked_until = NULL WHERE scope = $1 AND lease = $2 AND status = 0`, c.scope, c.lease, a.Status, a.Headers, a.Body)
	if err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	return nil
}

// Settle ends an owned claim whose request failed (a 5xx, or no answer from the service): it
// releases the key (an empty lease, so that a retry runs again, with any body), unless the service
// recorded an answer with its effect, which it returns. Either way the outcome is final when
// Settle returns: a transaction still running under the claim can no longer record (its fence
// is gone), so it cannot commit. The row stays, with its first claim time, so a retry's
// StableID names the same effect (a clone job the failed request may have started).
func (st *Store) Settle(ctx context.Context, c Claim) (*Answer, error) {
	tag, err := st.pool.Exec(ctx, `UPDATE idempotency_keys SET lease = '', locked_until = now()
		WHERE scope = $1 AND lease = $2 AND status = 0`, c.scope, c.lease)
	if err != nil {
		return nil, fmt.Errorf("settle idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil, nil
	}
	var a Answer
	err = st.pool.QueryRow(ctx, `SELECT status, response_headers, response_body FROM idempotency_keys
		WHERE scope = $1 AND lease = $2 AND status <> 0`, c.scope, c.lease).Scan(&a.Status, &a.Headers, &a.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil // taken over after its lease ended: the key is another request's now
	}
	if err != nil {
		return nil, fmt.Errorf("settle idempotency key: %w", err)
	}
	return &a, nil
}

// Hold renews an owned claim every LeaseRenewal until the returned stop is called, so the key
// stays bound for as long as its request runs, and no longer than Lease after its process died.
func (st *Store) Hold(c Claim) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(LeaseRenewal)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), LeaseRenewal)
			_, err := st.pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = now() + $3 * interval '1 millisecond'
				WHERE scope = $1 AND lease = $2 AND status = 0`, c.scope, c.lease, Lease.Milliseconds())
			cancel()
			if err != nil {
				st.log.Warn("idempotency lease not renewed", "error", err)
			}
		}
	}()
	return func() { close(done) }
}

// Purge deletes keys older than the retention, a batch at a time, and returns how many.
func (st *Store) Purge(ctx context.Context) (int64, error) {
	var total int64
	for {
		tag, err := st.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE id IN (SELECT id FROM idempotency_keys
			WHERE created_at <= now() - $1 * interval '1 millisecond' LIMIT $2)`, Retention.Milliseconds(), purgeBatch)
		if err != nil {
			return total, fmt.Errorf("purge idempotency keys: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			return total, nil
		}
	}
}

// maybePurge starts a purge in the background when this process has not run one for
// purgeEvery. Expired rows never change an answer (a claim takes them over), so the purge only
// bounds the table; riding on claims keeps it where keys are written, with no scheduler.
func (st *Store) maybePurge() {
	now := time.Now().UnixNano()
	last := st.lastPurge.Load()
	if now-last < int64(purgeEvery) || !st.lastPurge.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n, err := st.Purge(ctx); err != nil {
			st.log.Warn("idempotency key purge failed", "error", err)
		} else if n > 0 {
			st.log.Info("idempotency keys purged", "deleted", n)
		}
	}()
}
