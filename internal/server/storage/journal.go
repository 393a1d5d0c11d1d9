package storage

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
)

// BeginJournal records that update journals onto its stack's version base.
func (c Conn) BeginJournal(ctx context.Context, update string, base int64) error {
	_, err := c.q.Exec(ctx, `INSERT INTO svc_journals (update_id, base_version) VALUES ($1, $2)`, update, base)
	return err
}

// Journal returns the base version of update's journal and how many of its entries are replayed into
// the stack's versions; ErrNotFound when the update keeps no journal.
func (c Conn) Journal(ctx context.Context, update string) (base, replayed int64, err error) {
	err = c.q.QueryRow(ctx, `SELECT base_version, replayed FROM svc_journals WHERE update_id = $1`, update).Scan(&base, &replayed)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, ErrNotFound
	}
	return base, replayed, err
}

// SetReplayed records that the first replayed entries of update's journal are replayed.
func (c Conn) SetReplayed(ctx context.Context, update string, replayed int64) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_journals SET replayed = $2 WHERE update_id = $1`, update, replayed)
	return err
}

// Entry is a journal entry: its sequence ID and its JSON.
type Entry struct {
	Seq  int64
	Data []byte
}

// Entries returns those of the entries of update with sequence IDs seqs that are stored, by sequence ID.
func (c Conn) Entries(ctx context.Context, update string, seqs []int64) (map[int64][]byte, error) {
	rows, err := c.q.Query(ctx, `SELECT sequence_id, data FROM svc_journal_entries WHERE update_id = $1 AND sequence_id = ANY($2)`, update, seqs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := map[int64][]byte{}
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, err
		}
		stored[seq] = data
	}
	return stored, rows.Err()
}

// InsertEntries stores entries of update (none of them stored yet), in one COPY.
func (c Conn) InsertEntries(ctx context.Context, update string, entries []Entry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{update, e.Seq, e.Data}
	}
	_, err := c.q.CopyFrom(ctx, pgx.Identifier{"svc_journal_entries"}, []string{"update_id", "sequence_id", "data"}, pgx.CopyFromRows(rows))
	return err
}

// Prefix returns update's entries after sequence ID from, up to the first gap.
func (c Conn) Prefix(ctx context.Context, update string, from int64) ([]json.RawMessage, error) {
	rows, err := c.q.Query(ctx, `SELECT sequence_id, data FROM svc_journal_entries WHERE update_id = $1 AND sequence_id > $2 ORDER BY sequence_id`, update, from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var prefix []json.RawMessage
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, err
		}
		if seq != from+int64(len(prefix))+1 {
			break
		}
		prefix = append(prefix, data)
	}
	rows.Close()
	return prefix, rows.Err()
}
