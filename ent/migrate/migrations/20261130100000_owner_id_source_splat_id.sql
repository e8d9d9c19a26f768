-- Rename "asset_purges"."owner_record_id" to "owner_id": the customer's record id has one name, owner_id, as in scenes, upload_tickets and clone_jobs
ALTER TABLE "asset_purges" RENAME COLUMN "owner_record_id" TO "owner_id";
-- Rename "clone_jobs"."source_scene_id" to "source_splat_id": the clone source is the API's sourceSplatId
ALTER TABLE "clone_jobs" RENAME COLUMN "source_scene_id" TO "source_splat_id";
