-- Modify "scenes" table
ALTER TABLE "scenes" ADD COLUMN "processing_state" character varying NOT NULL DEFAULT 'skipped', ADD COLUMN "processing_message" character varying NULL, ADD COLUMN "rendition_prefix" character varying NULL, ADD COLUMN "rendition_type" character varying NULL, ADD COLUMN "rendition_key" character varying NULL, ADD COLUMN "rendition_bytes" bigint NULL, ADD COLUMN "rendition_files" bigint NULL, ADD COLUMN "gaussians" bigint NULL;
-- Create index "scene_processing_state_updated_at" to table: "scenes"
CREATE INDEX "scene_processing_state_updated_at" ON "scenes" ("processing_state", "updated_at");
-- Scenes committed before renditions existed get one: the rendition re-drive starts their
-- workflows (single-file scenes of the formats the converter reads; the query string of a
-- stored URL never holds the extension).
UPDATE "scenes" SET "processing_state" = 'pending',
  "rendition_prefix" = 'i/' || "integration_id" || '/u/' || "owner_id" || '/rendition/' || "id" || '/'
  WHERE "splat_type" = 'file' AND lower("splat_url") ~ '\.(ply|splat|ksplat)$';
