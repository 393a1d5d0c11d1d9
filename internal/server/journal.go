package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/cdkx-dev/cdkx/internal/server/journal"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Journaling: PATCH /api/stacks/{org}/{project}/{stack}/{kind}/{id}/journalentries.
//
// When start is asked for journalVersion ≥ 1 it answers journalVersion 1 (journalVersion), and the
// Pulumi CLI (≥ 3.225) then sends, instead of checkpoints, the journal entries its engine records per
// step (apitype.JournalEntries {entries: [apitype.JournalEntry…]}), in batches of up to 100, retried
// as they are. The server stores every entry of the update (svc_journal_entries), idempotently by
// sequence ID: a repeat is ignored, the same sequence ID with other content is a 409. It then replays,
// from scratch, the entries 1..k with no gap in their sequence IDs onto the checkpoint the update
// started from (svc_journals.base_version, the version start returned) and stores the result as the
// stack's next checkpoint, so that export and complete always see the replayed state. Entries after a
// gap (a later batch that overtook an earlier one) are kept and replayed once the gap is filled.
//
// A request is refused with a 4xx, and changes nothing, when an entry is malformed (not an object, no
// kind, a sequence ID below 1, a state or operation without urn and type, a write without a snapshot…),
// of an unknown kind or version (state-migration entries, version 2, are not offered; version 0, from
// before entries carried a version, is taken as 1), when an index names no resource of the base, an
// operation ID names no operation of the update that produced a resource, an operation begins or ends
// twice, or the update did not negotiate journaling. An entry after a gap is checked once the gap is
// filled: the request that fills it is the one refused.
//
// A request that extends nothing (a repeat, or entries after a gap) only stores its entries.
//
//
// The replay itself is package journal's (internal/server/journal). Each replica keeps the Replayer of
// a journaled update it served last (textCache), keyed by update and the entries it replayed, checked
// against svc_journals.replayed in the transaction: a request then reads and replays only the entries it
// brought, and writes the resulting checkpoint (copied, not parsed, from the replayer's pieces). On a
// miss (another replica served the update, a restart) the replay starts again from the base.

// journalVersion is the journal format the server replays (journal.Version); version 2
// (state-migration entries) is not offered.
const journalVersion = journal.Version

// incomingEntry is an entry of a request, checked and compacted.
type incomingEntry struct {
	seq  int64
	data []byte
}

func (s *Server) journalEntries(req *http.Request, c *call) (any, error) {
	var body stateapi.JournalEntries
	if _, err := s.decodeBody(req, &body, false); err != nil {
		return nil, err
	}
	entries, err := checkEntries(body.Entries)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	var stackID, version, replayed int64
	var text []byte
	var updateID string
	var r *journal.Replayer
	err = s.inTx(ctx, func(tx *storage.Tx) error {
		u, err := s.lockRunning(ctx, tx, req, c)
		if err != nil {
			return err
		}
		base, done, err := tx.Journal(ctx, u.id)
		replayed = done
		if errors.Is(err, storage.ErrNotFound) {
			return errorf(http.StatusConflict, "Conflict: update %s did not ask for journaling when it started (journalVersion); send checkpoints", u.id)
		}
		if err != nil {
			return err
		}
		added, err := storeEntries(ctx, tx, u.id, entries)
		if err != nil {
			return err
		}
		// Entry replayed+1 is never stored before this request (else the request that stored it would
		// have replayed it): the replayed prefix grows only if this request brought it.
		if !slices.Contains(added, replayed+1) {
			return nil
		}
		r = s.texts.takeReplay(u.id, replayed)
		from := replayed
		if r == nil {
			baseText, err := s.checkpointText(ctx, tx, u.stackID, base)
			if err != nil {
				return err
			}
			if r, err = journal.NewReplayer(baseText); err != nil {
				return replayError(err)
			}
			from = 0
		}
		fresh, err := tx.Prefix(ctx, u.id, from)
		if err != nil {
			return err
		}
		now := s.now()
		for _, raw := range fresh {
			if err := r.Apply(raw, now); err != nil {
				return replayError(err)
			}
		}
		next, count, err := r.Bytes(now)
		if err != nil {
			return replayError(err)
		}
		if version, err = s.storeCheckpoint(ctx, tx, u, next, nil, nil, count); err != nil {
			return err
		}
		stackID, text, updateID = u.stackID, next, u.id
		replayed = from + int64(len(fresh))
		return tx.SetReplayed(ctx, u.id, replayed)
	})
	if err == nil && version > 0 {
		s.texts.put(stackID, version, text, nil)
		s.texts.putReplay(updateID, replayed, r)
	}
	return nil, err
}

// replayError turns an error of package journal into the answer: a bad entry is a 400, a base that
// cannot be replayed onto a 409.
func replayError(err error) error {
	switch {
	case errors.Is(err, journal.ErrEntry):
		return errorf(http.StatusBadRequest, "Bad Request: %v", err)
	case errors.Is(err, journal.ErrBase):
		return errorf(http.StatusConflict, "Conflict: %v", err)
	}
	return err
}

// checkEntries checks each entry of a request on its own (what can be checked without the journal so
// far) and returns them compacted, without the repeats within the request.
func checkEntries(raws []json.RawMessage) ([]incomingEntry, error) {
	if len(raws) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the request has no journal entries")
	}
	out := make([]incomingEntry, 0, len(raws))
	seen := make(map[int64]int, len(raws))
	for i, raw := range raws {
		e, err := journal.Decode(raw)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: entry %d of the request: %v", i, err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: entry %d of the request: %v", i, err)
		}
		if j, ok := seen[e.SequenceID]; ok {
			if !journal.SameJSON(out[j].data, buf.Bytes()) {
				return nil, errorf(http.StatusBadRequest, "Bad Request: the request has two different journal entries with sequence ID %d", e.SequenceID)
			}
			continue
		}
		seen[e.SequenceID] = len(out)
		out = append(out, incomingEntry{seq: e.SequenceID, data: buf.Bytes()})
	}
	return out, nil
}

// storeEntries stores the entries the update does not hold yet and returns their sequence IDs; an
// entry it holds with other content is a 409.
func storeEntries(ctx context.Context, tx *storage.Tx, updateID string, entries []incomingEntry) ([]int64, error) {
	seqs := make([]int64, len(entries))
	for i, e := range entries {
		seqs[i] = e.seq
	}
	stored, err := tx.Entries(ctx, updateID, seqs)
	if err != nil {
		return nil, err
	}
	var added []int64
	var fresh []storage.Entry
	for _, e := range entries {
		if data, ok := stored[e.seq]; ok {
			if !journal.SameJSON(data, e.data) {
				return nil, errorf(http.StatusConflict, "Conflict: journal entry %d is already stored with other content", e.seq)
			}
			continue
		}
		added = append(added, e.seq)
		fresh = append(fresh, storage.Entry{Seq: e.seq, Data: e.data})
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	return added, tx.InsertEntries(ctx, updateID, fresh)
}
