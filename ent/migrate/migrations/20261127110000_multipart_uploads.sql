-- Modify "upload_tickets" table
ALTER TABLE "upload_tickets" ADD COLUMN "multipart_upload_id" character varying NULL, ADD COLUMN "part_size" bigint NULL, ADD COLUMN "multipart_completed_at" timestamptz NULL;
