package server

// The cdkx extension: what the cdkx CLI needs beyond the Pulumi update lifecycle, under paths the
// Pulumi CLI never calls.
//
//   PATCH /api/stacks/{org}/{project}/{stack}/{kind}/{id}/commit   (update token)
//     stateapi.CommitRequest → stateapi.CommitResponse: a delta checkpoint against an explicit base
//     version whose result must be a valid cdkx document (400 otherwise), stored with the cdkx deployment
//     events that came with it, in one transaction; only the update bound to the deployment writes its
//     events (owner.go).
//   GET   /api/stacks/{org}/{project}/{stack}/export/{version}?checkpoint=true   (API token)
//     the stack's checkpoint version N (the counter start answers), where export/{version} without the
//     parameter counts versions as the Pulumi CLI's history does (history.go).
//   POST  /api/stacks/{org}/{project}/{stack}/update/{id}   with "leaseSeconds": N in the start body
//     a lease of N seconds (5–300) instead of the server's default (stateapi.StartUpdateRequest).
//   GET   /api/cdkx/{org}/{project}/locks[?stack=S]                 (API token)
//     → stateapi.LocksResponse: the active updates, with the cdkx lock holder each was created for.
//
// The deployment queue (deployments.go; its bodies are in pkg/stateapi/deployments.go), all with an API
// token: the caller is the token's name, recorded as createdBy, approvedBy, rejectedBy or abortedBy
// whatever the body says (claimedBy too: only the claiming token finishes a RUNNING deployment); claims,
// heartbeats and the abort of dead waiters use the server's clock (times in bodies are informational). D is a
// pkg/state.Deployment as JSON; lists and most answers leave its snapshot out. Errors are the usual
// {"code", "message"}; a 409 of the queue adds "queued": {"id", "stack", "position", "ahead": D} (the
// deployment is not at the head of its stack's queue: state.QueuedError) or "transition": {"id",
// "status", "to"} (its status does not allow the change: state.TransitionError). 404: no such
// deployment (or stack) in the project. POST and PATCH requests may carry an Idempotency-Key header: a
// retry with the same key gets the first answer again (idempotency.go).
//
//   POST  /api/cdkx/{org}/{project}/deployments
//     {"deployments": [D…]} → {"deployments": [D…]}: creates them all or none, in one transaction, at
//     the tail of their stacks' queues, with seq increasing in the order given (across every stack of the
//     server); status PROPOSED, PENDING or APPROVED (400 otherwise; 403 "forbidden" for a deploy that is
//     not PROPOSED under RequireSecondPerson: state.CheckCreate); snapshotHash is computed here (400 when
//     one is sent that is not the snapshot's, or when the plan's snapshotHash is not: state.BindSnapshot);
//     an existing ID is a 409; a stack that does not exist a 404; createdAt is kept when set, else now; a
//     non-zero heartbeatAt becomes now (a waiting process is attached).
//   POST  /api/cdkx/{org}/{project}/deployments/claim
//     {"ids": [ID…], "runner": R} → {"deployments": [D…]} (RUNNING), all or none, after aborting the dead
//     waiters of their stacks; 409 queued or transition.
//   POST  /api/cdkx/{org}/{project}/deployments/claim-next
//     {"stacks": [S…], "runner": R} → D with its snapshot, the oldest head of a queue of those stacks
//     (every stack when empty) that is APPROVED, or PENDING with no heartbeat, on a stack with nothing
//     RUNNING, now RUNNING; 204 when there is none.
//   POST  /api/cdkx/{org}/{project}/deployments/heartbeat
//     {"ids": [ID…]} → {"deployments": [D…]}: heartbeatAt = now for the PENDING, APPROVED and RUNNING
//     ones; every one of ids that exists is answered, in seq order.
//   POST  /api/cdkx/{org}/{project}/deployments/{id}/transition
//     {"from": [STATUS…], "to": STATUS, "error": E, "at": T} → D: a compare-and-set of the status to
//     APPROVED, REJECTED or ABORTED (RUNNING, COMPLETED, FAILED: 400) by the rules of
//     state.CheckTransition: 409 "transition" for a change that does not exist (e.g. PROPOSED→PENDING,
//     APPROVED→PROPOSED, anything out of a terminal status), 403 "forbidden" for one this token may not
//     make (approving its own proposal under RequireSecondPerson; ending a run another token claimed);
//     finishedAt = at (now when absent) when to is terminal.
//   POST  /api/cdkx/{org}/{project}/deployments/{id}/abort
//     {} → D: asks the runner of a RUNNING deployment to stop (abortedBy = caller; status unchanged);
//     409 transition when it is not RUNNING.
//   PATCH /api/cdkx/{org}/{project}/deployments/{id}
//     {"status", "finishedAt", "version", "error"} → D: finishes a RUNNING deployment (status COMPLETED,
//     FAILED or ABORTED); 409 transition otherwise; 403 "forbidden" when another token claimed it (only
//     its runner ends a run).
//   GET   /api/cdkx/{org}/{project}/deployments[?stack=S&status=A,B&limit=N]
//     → {"deployments": [D…]}, newest (highest seq) first, without snapshots.
//   GET   /api/cdkx/{org}/{project}/deployments/{id}                → D with its snapshot.
//   GET   /api/cdkx/{org}/{project}/deployments/{id}/events         → {"events": [state.Event…]}.
//
// Authorization (http.go, owner.go): like every route, these check the names in the path and query and
// the API token's organizations (403 for another organization's), and a read-only token may only GET.
// Beyond that: a RUNNING deployment is ended (PATCH, or a transition out of RUNNING) and kept alive
// (heartbeat) only by the token that claimed it (recorded as svc_deployments.claimed_by); any
// read-write token of the organization may ask it to stop (abort), create, approve, reject or claim.
// PATCH …/commit writes the events of a deployment only when the committing update owns it: its first
// commit binds a RUNNING deployment of its own stack to it, and no other update writes it afterwards.
//
// The cdkx CLI creates updates with a "cdkxLock" object (stateapi.UpdateProgramRequest.CdkxLock), which
// the server keeps with the update; renew_lease takes an optional "heartbeatAt"
// (stateapi.RenewUpdateLeaseRequest.HeartbeatAt) that the lock listing reports.

import (
	"encoding/json"
	"net/http"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// cdkxLocks answers GET /api/cdkx/{org}/{project}/locks[?stack=S]: stateapi.LocksResponse.
func (s *Server) cdkxLocks(r *http.Request, c *call) (any, error) {
	stored, err := s.db.Locks(r.Context(), r.PathValue("org"), r.PathValue("project"), r.URL.Query().Get("stack"))
	if err != nil {
		return nil, err
	}
	locks := []stateapi.ActiveUpdate{}
	for _, l := range stored {
		locks = append(locks, activeUpdate(l))
	}
	return stateapi.LocksResponse{Locks: locks}, nil
}

// activeUpdate is stored lock holder l as the API lists it.
func activeUpdate(l storage.Lock) stateapi.ActiveUpdate {
	a := stateapi.ActiveUpdate{Stack: l.Stack, UpdateID: l.Update, Kind: l.Kind, Status: l.Status, CreatedAt: l.CreatedAt,
		LeaseExpiresAt: l.LeaseExpires, HeartbeatAt: l.Heartbeat, Lock: l.Request}
	if a.Lock == nil {
		a.Lock = json.RawMessage("null")
	}
	return a
}
