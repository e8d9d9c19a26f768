package ratelimit

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PGBuckets is a Leaser on Postgres: one row per key in rate_limit_buckets, its TAT in
// microseconds of the database's clock, so the replicas' clocks never enter the arithmetic. The
// table is UNLOGGED: a lease writes no WAL and its commit waits for no flush, and a crash or a
// failover to the standby (which has no copy) only leaves every bucket full.
type PGBuckets struct {
	pool *pgxpool.Pool
}

// NewPGBuckets returns the buckets of the database pool reaches.
func NewPGBuckets(pool *pgxpool.Pool) *PGBuckets { return &PGBuckets{pool: pool} }

// leaseSQL takes up to $2 requests from bucket $1 in one statement: the bucket fits the requests
// whose TAT stays within a window ($4) of now, one per interval ($3); $5 is the quota, what a
// bucket never seen before holds. granted records what this statement took, for RETURNING (which
// sees only the new row).
const leaseSQL = `WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now)
INSERT INTO rate_limit_buckets AS b (key, tat, granted)
SELECT $1, c.now + $3::bigint * LEAST($2::bigint, $5::bigint), LEAST($2::bigint, $5::bigint) FROM c
ON CONFLICT (key) DO UPDATE SET
	granted = LEAST($2::bigint, GREATEST(0, ((SELECT now FROM c) + $4::bigint - GREATEST(b.tat, (SELECT now FROM c))) / $3::bigint)),
	tat = GREATEST(b.tat, (SELECT now FROM c)) + $3::bigint * LEAST($2::bigint, GREATEST(0, ((SELECT now FROM c) + $4::bigint - GREATEST(b.tat, (SELECT now FROM c))) / $3::bigint))
RETURNING granted, GREATEST(tat - (SELECT now FROM c), 0)`

// returnSQL gives back $2 requests of interval $3: a TAT that falls behind now is a full bucket.
const returnSQL = `UPDATE rate_limit_buckets SET tat = tat - $2::bigint * $3::bigint WHERE key = $1`

// micros is lim in the table's unit: the interval and the window in microseconds, and the quota
// those hold (a quota finer than a microsecond an interval is rounded down to one).
func micros(lim Limit) (interval, window, quota int64) {
	window = lim.Window.Microseconds()
	interval = max(window/int64(lim.Quota), 1)
	return interval, window, min(int64(lim.Quota), window/interval)
}

// Lease implements Leaser.
func (b *PGBuckets) Lease(ctx context.Context, key string, n int, lim Limit) (Lease, error) {
	t, w, q := micros(lim)
	var granted, ahead int64
	if err := b.pool.QueryRow(ctx, leaseSQL, key, min(int64(n), q), t, w, q).Scan(&granted, &ahead); err != nil {
		return Lease{}, err
	}
	return Lease{Granted: int(granted), Ahead: time.Duration(ahead) * time.Microsecond}, nil
}

// Return implements Leaser.
func (b *PGBuckets) Return(ctx context.Context, key string, n int, lim Limit) error {
	t, _, _ := micros(lim)
	_, err := b.pool.Exec(ctx, returnSQL, key, n, t)
	return err
}
