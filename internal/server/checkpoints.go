package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/cdkx-dev/cdkx/internal/server/integrity"
	"github.com/cdkx-dev/cdkx/internal/server/journal"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Checkpoint storage. A stack's versions are stored as a chain: a whole checkpoint (a snapshot), then
// deltas, each the text edits from the version before, until the deltas since the last snapshot
// outweigh it and the next version is stored whole again. Stored bytes grow with the size of the
// changes (a deploy of N resources stores O(N) bytes, not O(N²)), and rebuilding any version reads one
// snapshot and at most as many delta bytes. Each replica keeps the latest text of recently written
// stacks in memory (textCache), so that a checkpoint usually rebuilds nothing.

// maxCachedStacks bounds the stacks whose latest text a replica keeps in memory.
const maxCachedStacks = 256

// textCache maps a stack's row ID to the bytes of one of its versions and, when built, their docIndex
// (state.go), so that the next edit of that version is checked in O(size of the edit).
type textCache struct {
	mu sync.Mutex
	m  map[int64]cachedText
	// replays maps a journaled update's ID to the replayer of its entries (journal.go).
	replays map[string]cachedReplay
}

// maxCachedReplays bounds the journaled updates whose replayer a replica keeps in memory.
const maxCachedReplays = 64

// cachedReplay is the replayer of a journaled update's entries 1..replayed.
type cachedReplay struct {
	replayed int64
	r        *journal.Replayer
}

// takeReplay returns the cached replayer of the update's entries 1..replayed, if that is the one
// cached, and removes it from the cache: the caller owns it.
func (c *textCache) takeReplay(updateID string, replayed int64) *journal.Replayer {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.replays[updateID]
	if !ok {
		return nil
	}
	delete(c.replays, updateID)
	if e.replayed != replayed {
		return nil
	}
	return e.r
}

// putReplay caches r as the replayer of the update's entries 1..replayed; call it only once the
// transaction that stored its checkpoint has committed. A full cache drops an arbitrary entry.
func (c *textCache) putReplay(updateID string, replayed int64, r *journal.Replayer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replays == nil {
		c.replays = map[string]cachedReplay{}
	}
	if _, ok := c.replays[updateID]; !ok && len(c.replays) >= maxCachedReplays {
		for k := range c.replays {
			delete(c.replays, k)
			break
		}
	}
	c.replays[updateID] = cachedReplay{replayed: replayed, r: r}
}

type cachedText struct {
	version int64
	text    []byte
	// index is the text's index, or nil; whoever takes it (takeIndex) owns it.
	index *docIndex
}

// get returns the cached bytes of the stack at version, if those are the ones cached. Callers must not
// modify them.
func (c *textCache) get(stackID, version int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[stackID]
	if !ok || e.version != version {
		return nil, false
	}
	return e.text, true
}

// takeIndex returns the cached index of the stack's text at version, checked against the rules of
// kind, and removes it from the cache: the caller owns it (and may give it back with putIndex).
func (c *textCache) takeIndex(stackID, version int64, kind docKind) *docIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[stackID]
	if !ok || e.version != version || e.index == nil || e.index.Kind() != kind {
		return nil
	}
	ix := e.index
	e.index = nil
	c.m[stackID] = e
	return ix
}

// takeLatest returns the cached version of the stack, its text and its index (taken: the caller owns
// it), when it is earlier than version; else a nil text.
func (c *textCache) takeLatest(stackID, version int64) (int64, []byte, *docIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[stackID]
	if !ok || e.version >= version {
		return 0, nil, nil
	}
	ix := e.index
	e.index = nil
	c.m[stackID] = e
	return e.version, e.text, ix
}

// putIndex gives back the index of the stack's text at version, if that text is still the one cached.
func (c *textCache) putIndex(stackID, version int64, ix *docIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[stackID]; ok && e.version == version && e.index == nil {
		e.index = ix
		c.m[stackID] = e
	}
}

// put caches text (and its index, or nil) as the stack's bytes at version; call it only once the
// transaction that stored the version has committed. A full cache drops an arbitrary entry.
func (c *textCache) put(stackID, version int64, text []byte, ix *docIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]cachedText{}
	}
	if e, ok := c.m[stackID]; ok && e.version > version {
		return
	}
	if _, ok := c.m[stackID]; !ok && len(c.m) >= maxCachedStacks {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[stackID] = cachedText{version: version, text: text, index: ix}
}

// checkEdit checks next, which edits (sorted) turn prev, the stack's text at version, into, against
// the rules of kind, and returns its index. It reads only what the edits touch when the cache holds the
// index of prev; else it reads prev whole once (another replica wrote it, or this one restarted). A 400
// apiError when next breaks a rule.
func (s *Server) checkEdit(stackID, version int64, prev, next []byte, edits []textEdit, kind docKind) (*docIndex, error) {
	ix := s.texts.takeIndex(stackID, version, kind)
	if ix == nil {
		var err error
		if ix, err = integrity.Check(prev, kind); err != nil {
			// prev itself breaks the rules (stored before they were checked): check next whole.
			return indexDeployment(next, kind)
		}
	}
	nx, err := ix.Update(next, edits)
	if err != nil {
		s.texts.putIndex(stackID, version, ix)
		return nil, asAPIError(err)
	}
	return nx, nil
}

// checkpointText returns the exact bytes of the stack's checkpoint at version (the empty deployment for
// version 0), rebuilt from the last snapshot at or before it and the deltas after; a 404 apiError when
// the stack never reached version.
func (s *Server) checkpointText(ctx context.Context, tx *storage.Tx, stackID, version int64) ([]byte, error) {
	if version == 0 {
		return []byte(emptyDeployment), nil
	}
	if t, ok := s.texts.get(stackID, version); ok {
		return t, nil
	}
	if t, ok, err := s.rollForward(ctx, tx, stackID, version); ok || err != nil {
		return t, err
	}
	stored, err := tx.Chain(ctx, stackID, version)
	if err != nil {
		return nil, err
	}
	var base []byte
	var chain [][]textEdit
	last := int64(-1)
	for _, sv := range stored {
		v, data, delta := sv.Version, sv.Data, sv.Delta
		switch {
		case data != nil:
			base, chain = data, nil
		case last < 0 || v != last+1:
			return nil, fmt.Errorf("stack %d: version %d is a delta without version %d", stackID, v, v-1)
		default:
			edits, err := integrity.DecodeEdits(delta)
			if err != nil {
				return nil, fmt.Errorf("stack %d version %d: %w", stackID, v, err)
			}
			chain = append(chain, edits)
		}
		last = v
	}
	text, err := integrity.ApplyChain(base, chain)
	if err != nil {
		return nil, fmt.Errorf("stack %d version %d: stored deltas do not apply: %w", stackID, version, err)
	}
	if last != version {
		return nil, errorf(http.StatusNotFound, "Not Found: the stack has no version %d", version)
	}
	return text, nil
}

// maxRollForward bounds the versions rollForward applies to a cached text.
const maxRollForward = 16

// rollForward returns the stack's text at version built from an earlier version this replica caches
// (another replica wrote the versions since) and the stored deltas after it, and caches it with its
// index, moved through the same edits: reading the versions between costs O(size of their changes)
// (plus copying the text), not O(state). ok is false when the cache holds no earlier version, too old a
// one, or one a stored whole version (a snapshot) follows.
func (s *Server) rollForward(ctx context.Context, tx *storage.Tx, stackID, version int64) ([]byte, bool, error) {
	from, text, ix := s.texts.takeLatest(stackID, version)
	if text == nil || version-from > maxRollForward {
		return nil, false, nil
	}
	stored, err := tx.Deltas(ctx, stackID, from, version)
	if err != nil {
		return nil, false, err
	}
	last := from
	for _, sv := range stored {
		v, delta := sv.Version, sv.Delta
		if v != last+1 || delta == nil {
			return nil, false, nil // a gap (not yet visible) or a snapshot: rebuild as usual
		}
		edits, err := integrity.DecodeEdits(delta)
		if err != nil {
			return nil, false, fmt.Errorf("stack %d version %d: %w", stackID, v, err)
		}
		edits = integrity.SortEdits(edits)
		next, err := applyDelta(text, edits)
		if err != nil {
			return nil, false, fmt.Errorf("stack %d version %d: stored delta does not apply: %w", stackID, v, err)
		}
		if ix != nil {
			if ix, err = ix.Update(next, edits); err != nil {
				ix = nil // stored before the rules were checked: no index
			}
		}
		text, last = next, v
	}
	if last != version {
		return nil, false, nil
	}
	s.texts.put(stackID, version, text, ix)
	return text, true, nil
}

// stackRow is what storing a checkpoint needs of the stack's row, read under its lock.
type stackRow = storage.StackState

// storeCheckpoint stores next as the stack's next version and returns that version. edits, when not
// nil, are the text edits that turn the stack's current version into next (as a delta checkpoint sent
// them); when nil they are computed (one edit spanning what differs). resourceCount is recorded for
// stack listings.
func (s *Server) storeCheckpoint(ctx context.Context, tx *storage.Tx, u updateRow, next []byte, edits []textEdit, seq *int64, resourceCount int) (int64, error) {
	st, err := tx.LockStack(ctx, u.stackID)
	if err != nil {
		return 0, err
	}
	return s.storeCheckpointAt(ctx, tx, u, st, next, edits, seq, resourceCount)
}

// storeCheckpointAt is storeCheckpoint for a caller that locked the stack's row and read it (st).
func (s *Server) storeCheckpointAt(ctx context.Context, tx *storage.Tx, u updateRow, st stackRow, next []byte, edits []textEdit, seq *int64, resourceCount int) (int64, error) {
	version, snapshotBytes, deltaBytes := st.Version, st.SnapshotBytes, st.DeltaBytes
	var data, delta []byte
	if version > 0 {
		if edits == nil {
			prev, err := s.checkpointText(ctx, tx, u.stackID, version)
			if err != nil {
				return 0, err
			}
			edits = integrity.Diff(prev, next)
		}
		delta = integrity.EncodeEdits(edits)
	}
	if version == 0 || deltaBytes+int64(len(delta)) > snapshotBytes {
		data, delta = next, nil
		snapshotBytes, deltaBytes = int64(len(next)), 0
	} else {
		deltaBytes += int64(len(delta))
	}
	version++
	st = storage.StackState{Version: version, SnapshotBytes: snapshotBytes, DeltaBytes: deltaBytes}
	return version, tx.StoreVersion(ctx, u.stackID, st, resourceCount, u.id, seq, storage.Version{Data: data, Delta: delta}, s.now())
}

func (s *Server) checkpoint(r *http.Request, c *call) (any, error) {
	var req stateapi.PatchUpdateCheckpointRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Deployment) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the checkpoint has no deployment")
	}
	var compact bytes.Buffer
	fmt.Fprintf(&compact, `{"version":%d,"deployment":`, req.Version)
	if err := json.Compact(&compact, req.Deployment); err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the deployment is not valid JSON: %v", err)
	}
	compact.WriteByte('}')
	data := compact.Bytes()
	ix, err := indexDeployment(data, pulumiDoc)
	if err != nil {
		return nil, err
	}
	var stackID, version int64
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		stackID = u.stackID
		version, err = s.storeCheckpoint(r.Context(), tx, u, data, nil, nil, ix.Count())
		return err
	})
	if err == nil {
		s.texts.put(stackID, version, data, ix)
	}
	return nil, err
}

func (s *Server) checkpointVerbatim(r *http.Request, c *call) (any, error) {
	var req stateapi.PatchUpdateVerbatimCheckpointRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.UntypedDeployment) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the checkpoint has no untypedDeployment")
	}
	ix, err := indexDeployment(req.UntypedDeployment, pulumiDoc)
	if err != nil {
		return nil, err
	}
	var stackID, version int64
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		st, seen, _, err := tx.LockForCheckpoint(r.Context(), u.stackID, u.id, req.SequenceNumber)
		if err != nil || seen != nil {
			return err
		}
		stackID = u.stackID
		version, err = s.storeCheckpointAt(r.Context(), tx, u, st, req.UntypedDeployment, nil, &req.SequenceNumber, ix.Count())
		return err
	})
	if err == nil && version > 0 {
		s.texts.put(stackID, version, req.UntypedDeployment, ix)
	}
	return nil, err
}

func (s *Server) checkpointDelta(r *http.Request, c *call) (any, error) {
	var req stateapi.PatchUpdateCheckpointDeltaRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	edits, err := parseDelta(req.DeploymentDelta)
	if err != nil {
		return nil, err
	}
	edits = integrity.SortEdits(edits)
	var stackID, version int64
	var next []byte
	var ix *docIndex
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		// The base is the update's last checkpoint, which is the stack's current version while the
		// update is active.
		st, seen, base, err := tx.LockForCheckpoint(r.Context(), u.stackID, u.id, req.SequenceNumber)
		if err != nil || seen != nil {
			return err
		}
		if base == nil {
			return errorf(http.StatusBadRequest, "Bad Request: update %s has no checkpoint to apply a delta to; send it verbatim", u.id)
		}
		prev, err := s.checkpointText(r.Context(), tx, u.stackID, *base)
		if err != nil {
			return err
		}
		next, err = applyDelta(prev, edits)
		if err != nil {
			return err
		}
		if err := checkHash(next, req.CheckpointHash); err != nil {
			return err
		}
		if ix, err = s.checkEdit(u.stackID, *base, prev, next, edits, pulumiDoc); err != nil {
			return err
		}
		stackID = u.stackID
		version, err = s.storeCheckpointAt(r.Context(), tx, u, st, next, edits, &req.SequenceNumber, ix.Count())
		return err
	})
	if err == nil && version > 0 {
		s.texts.put(stackID, version, next, ix)
	}
	return nil, err
}

// deltaRequest is the body of checkpointdelta (the name the golden tests use).
type deltaRequest = stateapi.PatchUpdateCheckpointDeltaRequest
