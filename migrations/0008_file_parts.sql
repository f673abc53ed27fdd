-- edgeswarm D1 schema v8: a batch's output and error files are numbered R2 part objects written while
-- its swarm runs (docs/data.md, "R2: batch parts"); such a file's row names their key prefix and count.
-- NULL parts_prefix: the file is one object at `files/<tenant>/<id>`, as every upload is.
ALTER TABLE files ADD COLUMN parts_prefix TEXT;
ALTER TABLE files ADD COLUMN parts INTEGER;
