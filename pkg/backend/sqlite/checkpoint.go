package sqlite

import (
	"context"
	"database/sql"
	"os"
	"time"
)

// CheckpointThreshold is the WAL size above which the background checkpointer copies the WAL back into the
// database file.
const CheckpointThreshold = 8 << 20

// checkpointInterval is how often the checkpointer looks at the WAL's size.
const checkpointInterval = 100 * time.Millisecond

// checkpointer keeps WAL checkpoints off the commit path. SQLite's automatic checkpoint runs inside the
// COMMIT that crosses its threshold and fsyncs the WAL and the database file there; on a disk whose fsync
// sometimes takes 150 ms or more (measured on our CI machines), that stalls one commit, and every step
// waiting for it, for as long. The write connection therefore runs with wal_autocheckpoint(0), and this
// goroutine runs PASSIVE checkpoints on a connection of its own, which SQLite lets proceed while the writer
// keeps appending to the WAL. The last connection to close checkpoints whatever is left and removes the
// WAL, as SQLite always does.
type checkpointer struct {
	db   *sql.DB // one connection, used only for checkpoints
	wal  string  // the WAL file's path
	stop chan struct{}
	done chan struct{}
}

func startCheckpointer(ctx context.Context, path string) (*checkpointer, error) {
	db, err := openPool(ctx, path, checkpointParams(), 1)
	if err != nil {
		return nil, err
	}
	c := &checkpointer{db: db, wal: path + "-wal", stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if fi, err := os.Stat(c.wal); err == nil && fi.Size() >= CheckpointThreshold {
				// An error (busy) only means this round is skipped; the next one tries again.
				_, _ = c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}
}

// close stops the goroutine and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
