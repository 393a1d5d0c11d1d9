-- Deployments become records that wait in a queue per stack (Massdriver's model): proposed, approved or
-- rejected, queued in creation order (seq, across every stack), run one at a time per stack, aborted.
--   * seq: creation order, 1 or more, unique; the queue of a stack is its PENDING, APPROVED and RUNNING
--     deployments in seq order;
--   * created_at: when the record was created; started_at now means when it became RUNNING (0: not yet);
--   * plan: the JSON of a state.Plan, NULL when the deployment has none;
--   * heartbeat_at: the last heartbeat of the process waiting for or running it (0: none attached);
--   * at most one RUNNING deployment per stack: the database enforces it (deployments_one_running).
-- Portable SQL, as 00001_init.sql: TEXT and BIGINT only, times as BIGINT Unix nanoseconds.

-- +goose Up
ALTER TABLE deployments ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN created_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN message TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN approved_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN rejected_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN aborted_by TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN plan TEXT;
ALTER TABLE deployments ADD COLUMN state_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN heartbeat_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN runner TEXT NOT NULL DEFAULT '';

-- Past runs were created when they started: number them in that order (then by id).
UPDATE deployments SET created_at = started_at, seq = (
    SELECT count(*) FROM deployments AS o
    WHERE o.started_at < deployments.started_at
       OR (o.started_at = deployments.started_at AND o.id <= deployments.id));
-- started_at now means when a deployment became RUNNING: those that never ran have none.
UPDATE deployments SET started_at = 0 WHERE status IN ('PROPOSED', 'PENDING', 'APPROVED');

-- Runs left RUNNING by a process that stopped: only the newest of each stack may still be running.
UPDATE deployments SET status = 'ABORTED',
    error = 'left RUNNING by a process that stopped; aborted when the deployment queue was introduced'
WHERE status = 'RUNNING' AND EXISTS (
    SELECT 1 FROM deployments AS n WHERE n.stack = deployments.stack AND n.status = 'RUNNING' AND n.seq > deployments.seq);
-- The one left is treated as attached to a process since it started, so that the next claim of its
-- stack aborts it (no heartbeat for DeadAfter) unless a process still finishes it.
UPDATE deployments SET heartbeat_at = started_at WHERE status = 'RUNNING';

DROP INDEX deployments_stack_started_at;
DROP INDEX deployments_started_at;
CREATE UNIQUE INDEX deployments_seq ON deployments (seq);
CREATE INDEX deployments_stack_seq ON deployments (stack, seq);
-- The queues: only queued deployments, so that claims never read a stack's history.
CREATE INDEX deployments_queued ON deployments (stack, seq) WHERE status IN ('PENDING', 'APPROVED', 'RUNNING');
CREATE UNIQUE INDEX deployments_one_running ON deployments (stack) WHERE status = 'RUNNING';

-- +goose Down
DROP INDEX deployments_one_running;
DROP INDEX deployments_queued;
DROP INDEX deployments_stack_seq;
DROP INDEX deployments_seq;
CREATE INDEX deployments_stack_started_at ON deployments (stack, started_at);
CREATE INDEX deployments_started_at ON deployments (started_at);
ALTER TABLE deployments DROP COLUMN runner;
ALTER TABLE deployments DROP COLUMN heartbeat_at;
ALTER TABLE deployments DROP COLUMN state_version;
ALTER TABLE deployments DROP COLUMN plan;
ALTER TABLE deployments DROP COLUMN aborted_by;
ALTER TABLE deployments DROP COLUMN rejected_by;
ALTER TABLE deployments DROP COLUMN approved_by;
ALTER TABLE deployments DROP COLUMN message;
ALTER TABLE deployments DROP COLUMN created_at;
ALTER TABLE deployments DROP COLUMN seq;
