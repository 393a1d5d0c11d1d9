-- Tenancy (tokens.go, http.go, owner.go): which organizations an API token reaches and whether it may
-- write; which update owns a cdkx deployment's records and which token claimed it.

-- +goose Up
-- svc_tokens.orgs: the organizations the token reaches; '{*}' reaches every organization. Tokens that
-- existed before this migration get '{*}' and keep reaching every organization, so that an upgrade does
-- not break the CI jobs that use them; narrow them by creating scoped tokens (cdkx server token create
-- NAME --org ORG) and revoking the old ones. read_only: the token may only read (GET routes, decrypt).
ALTER TABLE svc_tokens ADD COLUMN orgs TEXT[] NOT NULL DEFAULT '{*}';
ALTER TABLE svc_tokens ALTER COLUMN orgs DROP DEFAULT;
ALTER TABLE svc_tokens ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT false;

-- svc_deployments.update_id: the update whose lease may write the deployment's events (PATCH …/commit),
-- bound by the first commit that names the RUNNING deployment; NULL until then. Deployments from before
-- this migration are unbound and bind on their next commit, as new ones do.
-- claimed_by: the name of the API token that claimed the deployment (made it RUNNING); only that token
-- may end it (finish, or a transition out of RUNNING). NULL: claimed before this migration (any token of
-- the organization may end it) or not claimed yet.
ALTER TABLE svc_deployments ADD COLUMN update_id TEXT;
ALTER TABLE svc_deployments ADD COLUMN claimed_by TEXT;

-- +goose Down
ALTER TABLE svc_deployments DROP COLUMN claimed_by;
ALTER TABLE svc_deployments DROP COLUMN update_id;
ALTER TABLE svc_tokens DROP COLUMN read_only;
ALTER TABLE svc_tokens DROP COLUMN orgs;
