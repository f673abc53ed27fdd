-- edgeswarm D1 schema v13: the calls' mean time to response headers, as the lanes of a swarm measured
-- it, next to `lane_slots` and `lane_latency_ms` (docs/data.md, "D1: swarms"). A tenant's next swarm of
-- the same model that fans out over few windows sizes its first lanes to fill the window within a share
-- of its expected time, which takes the time to headers: `lane_slots` only bounds it when a lane's
-- concurrency capped its slots (early headers). NULL: no lane timed a call, or the swarm predates it.
ALTER TABLE swarms ADD COLUMN lane_ttfb_ms REAL;
