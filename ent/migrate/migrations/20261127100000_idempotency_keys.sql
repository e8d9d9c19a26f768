-- Create "idempotency_keys" table
CREATE TABLE "idempotency_keys" ("id" character varying NOT NULL, "integration_id" character varying NOT NULL, "external_user_id" character varying NOT NULL DEFAULT '', "method" character varying NOT NULL, "path" text NOT NULL, "key" character varying NOT NULL, "scope" bytea NOT NULL, "request_hash" bytea NOT NULL, "lease" character varying NOT NULL, "locked_until" timestamptz NULL, "status" bigint NOT NULL DEFAULT 0, "response_headers" jsonb NULL, "response_body" bytea NULL, "created_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "idempotency_keys_scope_key" to table: "idempotency_keys"
CREATE UNIQUE INDEX "idempotency_keys_scope_key" ON "idempotency_keys" ("scope");
-- Create index "idempotencykey_created_at" to table: "idempotency_keys"
CREATE INDEX "idempotencykey_created_at" ON "idempotency_keys" ("created_at");
