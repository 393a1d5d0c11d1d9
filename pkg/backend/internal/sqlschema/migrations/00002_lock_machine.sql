-- Lock holders record the machine they run on (boot ID and PID namespace), so that a lock whose holder
-- process is gone can be recognised safely: a PID means something only on the machine that issued it.

-- +goose Up
ALTER TABLE locks ADD COLUMN machine TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE locks DROP COLUMN machine;
