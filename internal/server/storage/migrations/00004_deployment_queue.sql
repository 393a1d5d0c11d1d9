-- The deployment queue (cdkx.go): one FIFO queue per stack of its PENDING, APPROVED and RUNNING
-- deployments in seq order, at most one RUNNING per stack (enforced here by a unique index), and the
-- idempotency keys that make retried deployment requests answer what their first attempt did.

-- +goose Up
-- svc_deployments gains the columns the queue's statements select on; record stays the whole
-- pkg/state.Deployment (without its snapshot), and every statement that changes status, seq or
-- heartbeat_at changes record to match. started_at is set when a deployment becomes RUNNING (NULL before).
ALTER TABLE svc_deployments ALTER COLUMN started_at DROP NOT NULL;
ALTER TABLE svc_deployments ADD COLUMN status TEXT;
ALTER TABLE svc_deployments ADD COLUMN seq BIGINT;
ALTER TABLE svc_deployments ADD COLUMN heartbeat_at TIMESTAMPTZ;

-- seq: creation order across every stack of the service; CreateDeployments takes values from this
-- sequence under a lock, so a deployment is visible only once every one with a lower seq is.
CREATE SEQUENCE svc_deployment_seq AS BIGINT OWNED BY svc_deployments.seq;

-- Existing records: status from the record, seq in start order, created at their start; a RUNNING one
-- counts as heartbeating since its start, so that the first claim of its stack aborts it once DeadAfter
-- has passed (a cdkx from before the queue never sends heartbeats).
UPDATE svc_deployments SET status = coalesce(record->>'status', 'ABORTED');
UPDATE svc_deployments d SET seq = o.n
FROM (SELECT id, row_number() OVER (ORDER BY started_at, id) AS n FROM svc_deployments) o
WHERE d.id = o.id;
UPDATE svc_deployments SET heartbeat_at = started_at WHERE status = 'RUNNING';
UPDATE svc_deployments SET record = record
  || jsonb_build_object('status', status, 'seq', seq, 'createdAt', record->'startedAt')
  || CASE WHEN heartbeat_at IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('heartbeatAt', record->'startedAt') END;
SELECT setval('svc_deployment_seq', coalesce(max(seq), 0) + 1, false) FROM svc_deployments;
ALTER TABLE svc_deployments ALTER COLUMN seq SET DEFAULT nextval('svc_deployment_seq');
ALTER TABLE svc_deployments ALTER COLUMN seq SET NOT NULL;
ALTER TABLE svc_deployments ALTER COLUMN status SET NOT NULL;

-- Of several RUNNING deployments of one stack (possible before this migration), all but the newest are
-- marked ABORTED, so that the unique index below can be built.
UPDATE svc_deployments d SET status = 'ABORTED', record = d.record || jsonb_build_object(
    'status', 'ABORTED',
    'finishedAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'error', 'marked ABORTED on upgrade: a later deployment of the stack was also RUNNING')
WHERE d.status = 'RUNNING'
  AND EXISTS (SELECT 1 FROM svc_deployments n WHERE n.stack_id = d.stack_id AND n.status = 'RUNNING' AND n.seq > d.seq);

-- At most one RUNNING deployment per stack: a second claim fails with a unique violation.
CREATE UNIQUE INDEX svc_deployments_one_running ON svc_deployments (stack_id) WHERE status = 'RUNNING';
CREATE UNIQUE INDEX svc_deployments_seq ON svc_deployments (seq);
-- Queues and lists by stack, in seq order; the queued deployments of every stack (ClaimNext).
CREATE INDEX svc_deployments_stack_seq ON svc_deployments (stack_id, seq);
CREATE INDEX svc_deployments_queued ON svc_deployments (seq) WHERE status IN ('PENDING', 'APPROVED', 'RUNNING');
DROP INDEX svc_deployments_stack;
DROP INDEX svc_deployments_started;

-- svc_idempotency: the answer of each deployment request sent with an Idempotency-Key header (a client
-- retrying after a lost answer sends the same key and gets the same answer, without a second effect),
-- stored in the request's transaction; path is "METHOD /path" of the first request; body is NULL for a
-- 204. The collector deletes keys older than a day.
CREATE TABLE svc_idempotency (
  key        TEXT PRIMARY KEY,
  path       TEXT NOT NULL,
  status     INT,
  body       BYTEA,
  created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX svc_idempotency_created ON svc_idempotency (created_at);

-- +goose Down
DROP TABLE svc_idempotency;
DROP INDEX svc_deployments_queued;
DROP INDEX svc_deployments_stack_seq;
DROP INDEX svc_deployments_seq;
DROP INDEX svc_deployments_one_running;
UPDATE svc_deployments SET started_at = coalesce(started_at, (record->>'createdAt')::timestamptz, now());
ALTER TABLE svc_deployments ALTER COLUMN started_at SET NOT NULL;
ALTER TABLE svc_deployments DROP COLUMN heartbeat_at;
ALTER TABLE svc_deployments DROP COLUMN seq;
ALTER TABLE svc_deployments DROP COLUMN status;
CREATE INDEX svc_deployments_stack ON svc_deployments (stack_id, started_at);
CREATE INDEX svc_deployments_started ON svc_deployments (started_at);
