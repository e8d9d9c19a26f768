-- Rename "asset_purges"."external_user_record_id" to "owner_record_id": the same value (the customer's record id, scenes.owner_id) under the one name the code uses for it
ALTER TABLE "asset_purges" RENAME COLUMN "external_user_record_id" TO "owner_record_id";
