-- Journaled updates (PATCH …/journalentries, journal.go): the journal entries the Pulumi CLI sends instead of
-- checkpoints when start echoed journalVersion 1, and what the server replayed of them.

-- +goose Up
-- svc_journals: one row per update whose start negotiated journaling. base_version is the stack version
-- start returned, which the entries are replayed onto; replayed is the last sequence ID of the entries
-- 1..replayed (no gap) whose replay is the stack's current checkpoint (0: none yet).
CREATE TABLE svc_journals (
  update_id    TEXT PRIMARY KEY REFERENCES svc_updates (id) ON DELETE CASCADE,
  base_version BIGINT NOT NULL,
  replayed     BIGINT NOT NULL DEFAULT 0
);

-- svc_journal_entries: the entries of a journaled update, by sequence ID (the idempotency key: a repeat
-- is ignored); data is the entry's compact JSON (apitype.JournalEntry).
CREATE TABLE svc_journal_entries (
  update_id   TEXT NOT NULL REFERENCES svc_journals (update_id) ON DELETE CASCADE,
  sequence_id BIGINT NOT NULL CHECK (sequence_id > 0),
  data        BYTEA NOT NULL,
  PRIMARY KEY (update_id, sequence_id)
);

-- +goose Down
DROP TABLE svc_journal_entries;
DROP TABLE svc_journals;
