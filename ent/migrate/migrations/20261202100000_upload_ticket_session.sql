-- Add "upload_tickets"."session_id" (the editor session that asked for the ticket) and an index for counting a customer's open tickets
ALTER TABLE "upload_tickets" ADD COLUMN "session_id" character varying NULL;
-- Create index "uploadticket_owner_id_expires_at" to table: "upload_tickets"
CREATE INDEX "uploadticket_owner_id_expires_at" ON "upload_tickets" ("owner_id", "expires_at");
