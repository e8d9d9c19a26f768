-- Numbers every webhook event (the body's "sequence"). Drawn by the writer while it holds the
-- changed resource's row lock, so one resource's numbers rise in the order its changes commit.
-- CACHE 1 (the default) is what makes that hold: a session caching a block would hand out
-- numbers out of time order across sessions.
CREATE SEQUENCE "webhook_event_seq" AS bigint CACHE 1;
