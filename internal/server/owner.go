package server

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// authorizeRecordWrite checks that the update u (whose lease the request holds, its row locked) may
// write the records and events of the cdkx deployment deploymentID: only the update that owns the
// deployment may.
func authorizeRecordWrite(ctx context.Context, tx pgx.Tx, u updateRow, deploymentID string) error {
	return nil
}
