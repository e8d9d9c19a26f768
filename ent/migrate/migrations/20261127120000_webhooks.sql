-- Create "webhook_deliveries" table
CREATE TABLE "webhook_deliveries" ("id" character varying NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "integration_id" character varying NOT NULL, "endpoint_id" character varying NOT NULL, "type" character varying NOT NULL, "payload" text NOT NULL, "state" character varying NOT NULL DEFAULT 'pending', "attempts" bigint NOT NULL DEFAULT 0, "last_status_code" bigint NULL, "last_error" character varying NULL, "next_attempt_at" timestamptz NULL, "dispatched_at" timestamptz NULL, "delivered_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "webhookdelivery_endpoint_id_created_at_id" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_endpoint_id_created_at_id" ON "webhook_deliveries" ("endpoint_id", "created_at", "id");
-- Create index "webhookdelivery_state_dispatched_at_created_at" to table: "webhook_deliveries"
CREATE INDEX "webhookdelivery_state_dispatched_at_created_at" ON "webhook_deliveries" ("state", "dispatched_at", "created_at");
-- Create "webhook_endpoints" table
CREATE TABLE "webhook_endpoints" ("id" character varying NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "integration_id" character varying NOT NULL, "url" character varying NOT NULL, "events" jsonb NULL, "description" character varying NOT NULL DEFAULT '', "secret_sealed" bytea NOT NULL, "previous_secret_sealed" bytea NULL, "previous_expires_at" timestamptz NULL, "deleted_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "webhookendpoint_integration_id_deleted_at" to table: "webhook_endpoints"
CREATE INDEX "webhookendpoint_integration_id_deleted_at" ON "webhook_endpoints" ("integration_id", "deleted_at");
