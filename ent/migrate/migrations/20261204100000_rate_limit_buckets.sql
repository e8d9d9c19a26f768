-- Create "rate_limit_buckets": the integration rate limits every gateway replica draws from
-- (internal/ratelimit PGBuckets). Written by hand, not generated: ent cannot say UNLOGGED, and
-- ent's diffs look only at its own tables, so this one stays as written. UNLOGGED because the
-- state is worth less than its WAL: a crash or a failover leaves every bucket full.
CREATE UNLOGGED TABLE "rate_limit_buckets" ("key" character varying NOT NULL, "tat" bigint NOT NULL, "granted" bigint NOT NULL DEFAULT 0, PRIMARY KEY ("key"));
