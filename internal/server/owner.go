package server

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// authorizeRecordWrite checks that the update u (whose lease the request holds, its row locked) may
// write the records and events of the cdkx deployment deploymentID: only the update that owns the
// deployment may. The rules, all answered 403:
//
//   - A deployment of the queue (svc_deployments) must be of u's stack. The first commit that names it
//     binds it to its update (svc_deployments.update_id), and it must then be RUNNING (claimed: cdkx
//     claims its deployments before it writes state) and claimed by the API token that created the
//     update (when both are known), so that another token of the organization cannot take the stack's
//     lock between the claim and the run's lock and bind the run's deployment to its own update; from
//     then on only that update writes it, whatever its status (a run may add its last events after its
//     record ended).
//   - An ID the queue does not know (a client that records no deployment, the state.Backend contract
//     suite) names events only: they belong to the stack of the first event stored under that ID, and
//     an update of another stack may not add to them. createDeployments refuses such an ID, so events
//     cannot be planted ahead of a record.
//
// A verdict read from committed rows that lets the write through never changes (a binding is never
// undone, and the stack of an ID's first stored event never moves), so each replica remembers it
// (ownerCache): after the commit that binds a deployment, the next one asks the database once more and
// the rest not at all.
func (s *Server) authorizeRecordWrite(ctx context.Context, tx *storage.Tx, u updateRow, deploymentID string) error {
	if s.owners.allowed(u, deploymentID) {
		return nil
	}
	settled, err := authorizeRecordWrite(ctx, tx, u, deploymentID)
	if err == nil && settled != nil {
		s.owners.remember(deploymentID, *settled)
	}
	return err
}

// ownerCache holds the verdicts of authorizeRecordWrite that allowed a write: by deployment ID, the
// update bound to it, or the stack its free events belong to. It is bounded: past ownerCacheSize entries
// it starts again empty (a miss only costs the query).
type ownerCache struct {
	mu sync.Mutex
	m  map[string]ownerVerdict
}

// ownerCacheSize bounds ownerCache.
const ownerCacheSize = 100_000

// ownerVerdict is who may write a deployment's events: the update bound to it, or, for free events
// (update ""), any update of stack.
type ownerVerdict struct {
	update string
	stack  int64
}

func (c *ownerCache) allowed(u updateRow, deploymentID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[deploymentID]
	return ok && (v.update == u.id || (v.update == "" && v.stack == u.stackID))
}

func (c *ownerCache) remember(deploymentID string, v ownerVerdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= ownerCacheSize {
		c.m = make(map[string]ownerVerdict)
	}
	c.m[deploymentID] = v
}

// authorizeRecordWrite applies the rules of Server.authorizeRecordWrite. settled, when not nil, is a
// verdict that allows the write and that committed rows decided (a binding made earlier, or free events
// stored earlier): no later request can change it.
func authorizeRecordWrite(ctx context.Context, tx *storage.Tx, u updateRow, deploymentID string) (settled *ownerVerdict, err error) {
	w, err := tx.WriterOf(ctx, deploymentID, u.id)
	if errors.Is(err, storage.ErrNotFound) {
		return authorizeFreeEvents(ctx, tx, u, deploymentID)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case w.StackID != u.stackID:
		return nil, errorf(http.StatusForbidden, "Forbidden: deployment %s is a deployment of another stack; update %s may write only the deployments of its own stack", deploymentID, u.id)
	case w.Update == u.id:
		return &ownerVerdict{update: u.id}, nil
	case w.Update != "":
		return nil, errorf(http.StatusForbidden, "Forbidden: deployment %s is written by update %s; update %s may not write its records or events (each run writes only the deployments it claimed)", deploymentID, w.Update, u.id)
	case w.Status != state.StatusRunning:
		return nil, errorf(http.StatusForbidden, "Forbidden: deployment %s is %s, not RUNNING; a commit writes the events of a deployment its run claimed (POST …/deployments/claim) and has not finished", deploymentID, w.Status)
	case w.ClaimedBy != "" && w.Creator != "" && w.ClaimedBy != w.Creator:
		return nil, errorf(http.StatusForbidden, "Forbidden: deployment %s was claimed by token %q, and update %s was created by token %q; a run writes its deployments with the token that claimed them", deploymentID, w.ClaimedBy, u.id, w.Creator)
	}
	bound, err := tx.Bind(ctx, deploymentID, u.id, u.stackID)
	if err != nil {
		return nil, err
	}
	if !bound {
		return nil, errorf(http.StatusForbidden, "Forbidden: deployment %s changed while update %s bound it (finished, aborted or bound by another update); read it again", deploymentID, u.id)
	}
	return nil, nil // bound now, but only once this transaction commits
}

// authorizeFreeEvents checks a commit's events under an ID the queue does not know (see
// authorizeRecordWrite): the first stored event of that ID, if any, must be of u's stack.
func authorizeFreeEvents(ctx context.Context, tx *storage.Tx, u updateRow, deploymentID string) (*ownerVerdict, error) {
	stackID, err := tx.EventsStack(ctx, deploymentID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if stackID != u.stackID {
		return nil, errorf(http.StatusForbidden, "Forbidden: the events of deployment %s are another stack's; update %s may write only the events of its own stack", deploymentID, u.id)
	}
	return &ownerVerdict{stack: stackID}, nil
}
