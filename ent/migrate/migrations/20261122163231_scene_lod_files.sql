-- Modify "scenes" table
ALTER TABLE "scenes" ADD COLUMN "lod_files" bigint NULL;
