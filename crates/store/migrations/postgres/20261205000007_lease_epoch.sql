-- The fencing token of a turn's lease: raised by every takeover of an expired lease. A writer holding the
-- lease writes with the epoch it got; once another executor has taken the turn over, the stale writer's
-- epoch no longer matches and its writes are refused.
ALTER TABLE turn ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0;
