-- Modify "asset_purges" table
ALTER TABLE "asset_purges" ADD COLUMN "kind" character varying NOT NULL DEFAULT 'customer', ADD COLUMN "scene_id" character varying NULL, ADD COLUMN "ticket_ids" jsonb NULL, ADD COLUMN "prepared_at" timestamptz NULL;
