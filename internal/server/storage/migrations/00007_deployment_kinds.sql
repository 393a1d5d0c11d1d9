-- Pages of a stack's history filtered by kind (pkg/state.DeploymentFilter.Kinds, the console's filter):
-- svc_deployments.kind is the record's kind, kept by PostgreSQL itself (a generated column: no statement
-- has to remember it), indexed with the stack and seq as svc_deployments_stack_seq is, so that a page
-- (seq < cursor ORDER BY seq DESC) walks the index backwards. The review comments (approvalComment,
-- rejectionComment) live in record, like approvedBy and rejectedBy: no column.

-- +goose Up
ALTER TABLE svc_deployments ADD COLUMN kind TEXT GENERATED ALWAYS AS (record->>'kind') STORED;
CREATE INDEX svc_deployments_stack_kind_seq ON svc_deployments (stack_id, kind, seq);

-- +goose Down
DROP INDEX svc_deployments_stack_kind_seq;
ALTER TABLE svc_deployments DROP COLUMN kind;
