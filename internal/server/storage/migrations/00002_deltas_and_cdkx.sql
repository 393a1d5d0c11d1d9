-- Linear checkpoint storage, and the cdkx extension (deployment records, their events, lock holders).

-- +goose Up
-- A checkpoint is stored either whole (data) or as the text edits (delta, JSON [[start,end,"text"],…],
-- byte offsets) that turn the stack's previous version into it. The stack row counts the bytes of its
-- latest whole checkpoint and of the deltas stored since, so that a new whole checkpoint is written once
-- the deltas outweigh the last one: storage grows with the size of the changes, and rebuilding any
-- version reads at most about twice the size of the state.
ALTER TABLE svc_checkpoints ALTER COLUMN data DROP NOT NULL;
ALTER TABLE svc_checkpoints ADD COLUMN delta BYTEA;
ALTER TABLE svc_checkpoints ADD CONSTRAINT svc_checkpoints_data_or_delta CHECK ((data IS NULL) <> (delta IS NULL));
ALTER TABLE svc_stacks ADD COLUMN snapshot_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE svc_stacks ADD COLUMN delta_bytes BIGINT NOT NULL DEFAULT 0;

-- heartbeat_at: the client's last heartbeat (renew_lease with heartbeatAt); cdkx lock holders report it.
ALTER TABLE svc_updates ADD COLUMN heartbeat_at TIMESTAMPTZ;

-- svc_deployments: cdkx deployment records (pkg/state.Deployment as JSON, its template snapshot apart).
CREATE TABLE svc_deployments (
  id         TEXT PRIMARY KEY,
  stack_id   BIGINT NOT NULL REFERENCES svc_stacks (id) ON DELETE CASCADE,
  record     JSONB NOT NULL,
  snapshot   BYTEA,
  started_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX svc_deployments_stack ON svc_deployments (stack_id, started_at);
CREATE INDEX svc_deployments_started ON svc_deployments (started_at);

-- svc_deployment_events: a cdkx deployment's lifecycle events (pkg/state.Event as JSON), numbered from
-- 1 by seq, stored in the transaction of the checkpoint they came with.
CREATE TABLE svc_deployment_events (
  deployment_id TEXT NOT NULL,
  seq           BIGINT NOT NULL,
  stack_id      BIGINT NOT NULL REFERENCES svc_stacks (id) ON DELETE CASCADE,
  data          JSONB NOT NULL,
  PRIMARY KEY (deployment_id, seq)
);

-- +goose Down
DROP TABLE svc_deployment_events;
DROP TABLE svc_deployments;
ALTER TABLE svc_updates DROP COLUMN heartbeat_at;
ALTER TABLE svc_stacks DROP COLUMN delta_bytes;
ALTER TABLE svc_stacks DROP COLUMN snapshot_bytes;
DELETE FROM svc_checkpoints WHERE data IS NULL;
ALTER TABLE svc_checkpoints DROP CONSTRAINT svc_checkpoints_data_or_delta;
ALTER TABLE svc_checkpoints DROP COLUMN delta;
ALTER TABLE svc_checkpoints ALTER COLUMN data SET NOT NULL;
