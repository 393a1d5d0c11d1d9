-- What the console needs of the deployment records:
--   * approval_comment, rejection_comment: what the reviewer wrote when approving or rejecting a
--     deployment (state.Deployment.ApprovalComment, RejectionComment), '' for none;
--   * deployments_stack_kind_seq, deployments_kind_seq: a stack's history (and every stack's) filtered by
--     kind, a page at a time (state.DeploymentFilter.Kinds and Before: seq < cursor ORDER BY seq DESC),
--     as deployments_stack_seq serves it unfiltered.
-- Portable SQL, as 00001_init.sql.

-- +goose Up
ALTER TABLE deployments ADD COLUMN approval_comment TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN rejection_comment TEXT NOT NULL DEFAULT '';
CREATE INDEX deployments_stack_kind_seq ON deployments (stack, kind, seq);
CREATE INDEX deployments_kind_seq ON deployments (kind, seq);

-- +goose Down
DROP INDEX deployments_kind_seq;
DROP INDEX deployments_stack_kind_seq;
ALTER TABLE deployments DROP COLUMN rejection_comment;
ALTER TABLE deployments DROP COLUMN approval_comment;
