-- Modify "scenes" table: the media task queue a rendition is planned on, and when its workflow was last started (the rendition dispatcher's in-flight set)
ALTER TABLE "scenes" ADD COLUMN "rendition_queue" character varying NULL, ADD COLUMN "rendition_started_at" timestamptz NULL;
