-- Create "asset_purges" table
CREATE TABLE "asset_purges" ("id" character varying NOT NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "integration_id" character varying NOT NULL, "external_user_record_id" character varying NOT NULL, "external_user_id" character varying NOT NULL, "keys" jsonb NULL, "prefixes" jsonb NULL, "scene_count" bigint NOT NULL DEFAULT 0, "done_at" timestamptz NULL, "deleted_objects" bigint NOT NULL DEFAULT 0, "failure" character varying NULL, PRIMARY KEY ("id"));
-- Create index "assetpurge_done_at_created_at" to table: "asset_purges"
CREATE INDEX "assetpurge_done_at_created_at" ON "asset_purges" ("done_at", "created_at");
