-- When a deployment was approved (state.Deployment.ApprovedAt), Unix nanoseconds as the other times;
-- 0 when it was not, and for records approved before this column (the time was not kept).
-- Portable SQL, as 00001_init.sql.

-- +goose Up
ALTER TABLE deployments ADD COLUMN approved_at BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE deployments DROP COLUMN approved_at;
