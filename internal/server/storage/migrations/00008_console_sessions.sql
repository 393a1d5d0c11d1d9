-- Sessions of the web console (internal/console.SessionStore), kept in the database so that every replica
-- behind a load balancer knows every session and a restart logs nobody out. A session is found by the
-- SHA-256 of the random ID its cookie carries: the ID itself is never stored. Its rights are its token's
-- as they are at each request (the console asks the token again), so token_name only lets a revoked
-- token's sessions go with it. expires_at serves the removal of expired sessions.

-- +goose Up
CREATE TABLE svc_console_sessions (
  id_hash    BYTEA PRIMARY KEY,
  token_name TEXT NOT NULL,
  read_only  BOOLEAN NOT NULL,
  orgs       TEXT[],
  csrf       TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX svc_console_sessions_expires ON svc_console_sessions (expires_at);
CREATE INDEX svc_console_sessions_token ON svc_console_sessions (token_name, created_at);

-- +goose Down
DROP TABLE svc_console_sessions;
