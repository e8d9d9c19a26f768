-- Create "clone_jobs" table
CREATE TABLE "clone_jobs" ("id" character varying NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "integration_id" character varying NOT NULL, "owner_id" character varying NOT NULL, "account_id" character varying NOT NULL, "source_scene_id" character varying NOT NULL, "bytes" bigint NOT NULL, "total_objects" bigint NOT NULL, "draft" jsonb NOT NULL, "plan" jsonb NOT NULL, PRIMARY KEY ("id"));
-- Create index "clonejob_owner_id" to table: "clone_jobs"
CREATE INDEX "clonejob_owner_id" ON "clone_jobs" ("owner_id");
