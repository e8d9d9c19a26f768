-- Add "asset_purges"."redriven_at": when the re-drive last offered the row, so each run takes the rows offered least recently
ALTER TABLE "asset_purges" ADD COLUMN "redriven_at" timestamptz NULL;
