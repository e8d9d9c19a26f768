-- Add "room_presences"."holder" (the session or visitor a socket counts against) and "can_edit" (an editor's seat, which a full room makes room for)
ALTER TABLE "room_presences" ADD COLUMN "holder" character varying NOT NULL DEFAULT '', ADD COLUMN "can_edit" boolean NOT NULL DEFAULT false;
-- Create index "roompresence_holder" to table: "room_presences"
CREATE INDEX "roompresence_holder" ON "room_presences" ("holder");
