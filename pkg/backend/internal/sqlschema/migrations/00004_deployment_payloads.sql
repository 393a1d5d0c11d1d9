-- A deployment's snapshot and plan (megabytes each for a large stack) move out of its row: every change
-- of a deployment's lifecycle — a heartbeat every 0.5 s while it waits or runs, its claim, its end —
-- then rewrites a row of a few hundred bytes instead of one that holds them (SQLite rewrites a whole
-- record, overflow pages included, on any update). They are written once, with the deployment.
--   * deployment_payloads: one row per deployment that has a snapshot or a plan; snapshot is the
--     deployment's snapshot (JSON text), plan the JSON of its state.Plan; either may be NULL.
-- Portable SQL, as 00001_init.sql.

-- +goose Up
CREATE TABLE deployment_payloads (
    id       TEXT NOT NULL PRIMARY KEY,
    snapshot TEXT,
    plan     TEXT
);
INSERT INTO deployment_payloads (id, snapshot, plan)
SELECT id, snapshot, plan FROM deployments WHERE snapshot IS NOT NULL OR plan IS NOT NULL;
ALTER TABLE deployments DROP COLUMN snapshot;
ALTER TABLE deployments DROP COLUMN plan;

-- +goose Down
ALTER TABLE deployments ADD COLUMN snapshot TEXT;
ALTER TABLE deployments ADD COLUMN plan TEXT;
UPDATE deployments SET
    snapshot = (SELECT p.snapshot FROM deployment_payloads AS p WHERE p.id = deployments.id),
    plan = (SELECT p.plan FROM deployment_payloads AS p WHERE p.id = deployments.id);
DROP TABLE deployment_payloads;
