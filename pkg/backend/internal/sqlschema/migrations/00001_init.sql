-- The cdkx state schema. Portable SQL: it runs unchanged on SQLite and PostgreSQL, so the PostgreSQL
-- backend can apply the same files (goose dialect postgres) and both speak the same row shapes.
--   * types: TEXT and BIGINT only;
--   * times: BIGINT Unix nanoseconds, UTC (0 means unset);
--   * JSON documents: TEXT (encoding/json of the pkg/state types);
--   * no rowid aliases, no WITHOUT ROWID, no AUTOINCREMENT, no sqlite-only functions.
-- "user" is a reserved word in PostgreSQL, hence locks.username.

-- +goose Up
-- stacks: one row per stack with state; version counts the commits (the journal rows) of the stack.
CREATE TABLE stacks (
    name         TEXT   NOT NULL PRIMARY KEY,
    version      BIGINT NOT NULL,
    status       TEXT   NOT NULL DEFAULT '',
    outputs      TEXT   NOT NULL DEFAULT '{}',
    dependencies TEXT   NOT NULL DEFAULT '[]',
    updated_at   BIGINT NOT NULL
);

-- resources: the current state of each resource; data is the JSON of a state.Resource.
CREATE TABLE resources (
    stack      TEXT NOT NULL REFERENCES stacks (name) ON DELETE CASCADE,
    logical_id TEXT NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (stack, logical_id)
);

-- journal: append-only; data is the JSON of the []state.Change committed at version. Replaying versions
-- 1..N with state.Stack.Apply rebuilds the stack as of version N.
CREATE TABLE journal (
    stack         TEXT   NOT NULL REFERENCES stacks (name) ON DELETE CASCADE,
    version       BIGINT NOT NULL,
    deployment_id TEXT   NOT NULL DEFAULT '',
    data          TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (stack, version)
);

-- deployments: one row per run; snapshot is the JSON template the run used.
CREATE TABLE deployments (
    id            TEXT   NOT NULL PRIMARY KEY,
    stack         TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    created_by    TEXT   NOT NULL DEFAULT '',
    cdkx_version  TEXT   NOT NULL DEFAULT '',
    snapshot      TEXT,
    snapshot_hash TEXT   NOT NULL DEFAULT '',
    started_at    BIGINT NOT NULL,
    finished_at   BIGINT NOT NULL DEFAULT 0,
    version       BIGINT NOT NULL DEFAULT 0,
    error         TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX deployments_stack_started_at ON deployments (stack, started_at);
CREATE INDEX deployments_started_at ON deployments (started_at);

-- events: a deployment's lifecycle events, numbered from 1 by seq. No foreign key to deployments: a
-- commit may carry events of a run that has no deployment record (tests, state surgery).
CREATE TABLE events (
    deployment_id TEXT   NOT NULL,
    seq           BIGINT NOT NULL,
    time          BIGINT NOT NULL,
    stack         TEXT   NOT NULL,
    logical_id    TEXT   NOT NULL DEFAULT '',
    type          TEXT   NOT NULL DEFAULT '',
    status        TEXT   NOT NULL DEFAULT '',
    reason        TEXT   NOT NULL DEFAULT '',
    PRIMARY KEY (deployment_id, seq)
);

-- locks: at most one holder per stack.
CREATE TABLE locks (
    stack        TEXT   NOT NULL PRIMARY KEY,
    id           TEXT   NOT NULL,
    operation    TEXT   NOT NULL DEFAULT '',
    username     TEXT   NOT NULL DEFAULT '',
    host         TEXT   NOT NULL DEFAULT '',
    pid          BIGINT NOT NULL DEFAULT 0,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE locks;
DROP TABLE events;
DROP TABLE deployments;
DROP TABLE journal;
DROP TABLE resources;
DROP TABLE stacks;
