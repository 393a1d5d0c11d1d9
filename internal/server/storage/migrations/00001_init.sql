-- The state service's schema. Every object is prefixed svc_ so that it never collides with the state
-- backend's tables (pkg/backend/postgres) when both live in one schema; goose records this schema's
-- migrations in svc_goose_db_version.

-- +goose Up
-- svc_tokens: API tokens, by name; only the SHA-256 of the token is stored.
CREATE TABLE svc_tokens (
  name       TEXT PRIMARY KEY,
  hash       BYTEA NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL
);

-- svc_stacks: one row per stack; version counts its checkpoints (0: never deployed).
CREATE TABLE svc_stacks (
  id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org            TEXT NOT NULL,
  project        TEXT NOT NULL,
  name           TEXT NOT NULL,
  tags           JSONB NOT NULL DEFAULT '{}',
  version        BIGINT NOT NULL DEFAULT 0,
  resource_count BIGINT NOT NULL DEFAULT 0,
  last_update    TIMESTAMPTZ,
  created_at     TIMESTAMPTZ NOT NULL,
  UNIQUE (org, project, name)
);

-- svc_updates: updates (update, preview, refresh, destroy, import) and their leases.
CREATE TABLE svc_updates (
  id               TEXT PRIMARY KEY,
  stack_id         BIGINT NOT NULL REFERENCES svc_stacks (id) ON DELETE CASCADE,
  kind             TEXT NOT NULL,
  status           TEXT NOT NULL,
  request          JSONB,
  lease_hash       BYTEA UNIQUE,
  lease_expires_at TIMESTAMPTZ,
  created_at       TIMESTAMPTZ NOT NULL,
  started_at       TIMESTAMPTZ,
  completed_at     TIMESTAMPTZ
);
-- At most one active update per stack: a second create fails with a unique violation (409).
CREATE UNIQUE INDEX svc_updates_one_active ON svc_updates (stack_id)
  WHERE status IN ('not started', 'requested', 'running');
CREATE INDEX svc_updates_gc ON svc_updates (status, lease_expires_at);

-- svc_checkpoints: every checkpoint of a stack, by the stack's version; data is the exact bytes of the
-- UntypedDeployment. sequence_number is the verbatim/delta idempotency key within the update.
CREATE TABLE svc_checkpoints (
  stack_id        BIGINT NOT NULL REFERENCES svc_stacks (id) ON DELETE CASCADE,
  version         BIGINT NOT NULL,
  update_id       TEXT NOT NULL REFERENCES svc_updates (id) ON DELETE CASCADE,
  sequence_number BIGINT,
  data            BYTEA NOT NULL,
  created_at      TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (stack_id, version),
  UNIQUE (update_id, sequence_number)
);
CREATE INDEX svc_checkpoints_update ON svc_checkpoints (update_id, version);

-- svc_events: engine events of an update, by their sequence; data is the event's JSON.
CREATE TABLE svc_events (
  update_id TEXT NOT NULL REFERENCES svc_updates (id) ON DELETE CASCADE,
  seq       BIGINT NOT NULL,
  data      BYTEA NOT NULL,
  PRIMARY KEY (update_id, seq)
);

-- +goose Down
DROP TABLE svc_events;
DROP TABLE svc_checkpoints;
DROP TABLE svc_updates;
DROP TABLE svc_stacks;
DROP TABLE svc_tokens;
