-- edgeswarm D1 schema v11: what one lane of a swarm carried and its calls' mean latency, as its lanes
-- measured them (docs/data.md, "D1: swarms"). A tenant's next swarm of the same model sizes its first
-- lanes on them (StartSwarmInput.lanePrior) instead of assuming header-bound lanes. NULL: no lane of
-- the swarm timed a call (or the swarm predates this column).
ALTER TABLE swarms ADD COLUMN lane_slots INTEGER;
ALTER TABLE swarms ADD COLUMN lane_latency_ms REAL;
