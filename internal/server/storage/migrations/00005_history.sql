-- Stack history (history.go): every update that is not a preview gets a history version 1, 2, 3… per
-- stack when it starts running (a preview: kind preview, or any kind whose request says
-- "options":{"dryRun":true}, as the Pulumi CLI sends for the preview step of up, refresh and destroy;
-- an import or a rename: when it is inserted, running), which GET …/updates reports and GET
-- …/export/{version} resolves; and who made each update.

-- +goose Up
-- svc_stacks.history_version: the stack's last history version (0: none yet); the trigger below takes
-- the next one from it under the stack's row lock.
ALTER TABLE svc_stacks ADD COLUMN history_version BIGINT NOT NULL DEFAULT 0;

-- svc_updates gains:
--   history_version   the update's history version (NULL: a preview, or never started);
--   created_by        the name of the API token that created it (NULL before this migration);
--   resource_changes  the resourceChanges of the engine's summary event ({"create":2,…}), if one came;
--   resource_count    the stack's resource count when the update ended.
ALTER TABLE svc_updates ADD COLUMN history_version BIGINT;
ALTER TABLE svc_updates ADD COLUMN created_by TEXT;
ALTER TABLE svc_updates ADD COLUMN resource_changes JSONB;
ALTER TABLE svc_updates ADD COLUMN resource_count BIGINT;

-- Existing updates that ran are numbered in start order.
UPDATE svc_updates u SET history_version = o.n
FROM (SELECT id, row_number() OVER (PARTITION BY stack_id ORDER BY started_at, created_at, id) AS n
      FROM svc_updates WHERE kind <> 'preview' AND (request->'options'->'dryRun') IS DISTINCT FROM 'true'::jsonb
        AND started_at IS NOT NULL) o
WHERE u.id = o.id;
UPDATE svc_stacks s SET history_version = coalesce((SELECT max(u.history_version) FROM svc_updates u WHERE u.stack_id = s.id), 0);
CREATE UNIQUE INDEX svc_updates_history ON svc_updates (stack_id, history_version) WHERE history_version IS NOT NULL;

-- The trigger numbers an update when it becomes running (start, or an import inserted running) and
-- records the stack's resource count when it ends, whichever statement does it (start, import, complete,
-- cancel, the collector, a takeover), so that no writer of svc_updates can forget to.
-- +goose StatementBegin
CREATE FUNCTION svc_updates_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was TEXT;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    was := OLD.status;
  END IF;
  IF NEW.kind <> 'preview' AND (NEW.request->'options'->'dryRun') IS DISTINCT FROM 'true'::jsonb
     AND NEW.history_version IS NULL AND NEW.status = 'running' THEN
    UPDATE svc_stacks SET history_version = history_version + 1 WHERE id = NEW.stack_id
      RETURNING history_version INTO NEW.history_version;
  END IF;
  IF NEW.history_version IS NOT NULL AND NEW.status IN ('succeeded', 'failed', 'cancelled')
     AND was IS DISTINCT FROM NEW.status THEN
    SELECT resource_count INTO NEW.resource_count FROM svc_stacks WHERE id = NEW.stack_id;
  END IF;
  RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER svc_updates_history BEFORE INSERT OR UPDATE OF status ON svc_updates
  FOR EACH ROW EXECUTE FUNCTION svc_updates_history();

-- +goose Down
DROP TRIGGER svc_updates_history ON svc_updates;
DROP FUNCTION svc_updates_history();
DROP INDEX svc_updates_history;
ALTER TABLE svc_updates DROP COLUMN resource_count;
ALTER TABLE svc_updates DROP COLUMN resource_changes;
ALTER TABLE svc_updates DROP COLUMN created_by;
ALTER TABLE svc_updates DROP COLUMN history_version;
ALTER TABLE svc_stacks DROP COLUMN history_version;
