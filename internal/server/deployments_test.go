package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

const deps = "/api/cdkx/org/proj/deployments"

// dep is a deployment to create: id of stack in status st, with a snapshot.
func dep(id, stack string, st state.DeploymentStatus) state.Deployment {
	snapshot := []byte(`{"s":"` + id + `"}`)
	return state.Deployment{ID: id, Stack: stack, Kind: state.KindDeploy, Status: st, Snapshot: snapshot,
		SnapshotHash: state.SnapshotHash(snapshot), CdkxVersion: "test", CreatedBy: "mallory"}
}

// waiting is dep with a heartbeat: a process waits for it.
func waiting(id, stack string) state.Deployment {
	d := dep(id, stack, state.StatusPending)
	d.HeartbeatAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return d
}

// create creates ds and returns the records answered.
func (e *env) create(ds ...state.Deployment) []state.Deployment {
	e.t.Helper()
	var resp deploymentsBody
	decode(e.t, e.must(200, "POST", deps, e.token, deploymentsBody{Deployments: ds}), &resp)
	return resp.Deployments
}

// get reads deployment id (with its snapshot).
func (e *env) get(id string) state.Deployment {
	e.t.Helper()
	var d state.Deployment
	decode(e.t, e.must(200, "GET", deps+"/"+id, e.token, nil), &d)
	return d
}

// list lists deployments with the query q.
func (e *env) list(q string) []string {
	e.t.Helper()
	var resp deploymentsBody
	decode(e.t, e.must(200, "GET", deps+q, e.token, nil), &resp)
	ids := []string{}
	for _, d := range resp.Deployments {
		if d.Snapshot != nil {
			e.t.Errorf("GET %s: %s has a snapshot, want none", q, d.ID)
		}
		ids = append(ids, d.ID)
	}
	return ids
}

// conflict decodes a 409 body.
func conflict(t *testing.T, body []byte) errorResponse {
	t.Helper()
	var er errorResponse
	decode(t, body, &er)
	return er
}

func TestCreateDeployments(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("prod")
	c := dep("c", "dev", state.StatusApproved)
	c.ApprovedBy = "mallory"
	c.CreatedAt = time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	got := e.create(waiting("a", "dev"), dep("b", "prod", state.StatusProposed), c)
	now := e.clock.now()
	want := []state.Deployment{waiting("a", "dev"), dep("b", "prod", state.StatusProposed), c}
	for i := range want {
		want[i].Seq, want[i].CreatedBy, want[i].Snapshot = int64(i+1), "alice", nil
		if want[i].CreatedAt.IsZero() {
			want[i].CreatedAt = now
		}
	}
	want[0].HeartbeatAt, want[2].ApprovedBy, want[2].ApprovedAt = now, "alice", now // the token's name, the server's clock
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("POST deployments answered (-want +got):\n%s", diff)
	}
	if d := e.get("a"); string(d.Snapshot) != `{"s":"a"}` || d.Seq != 1 {
		t.Errorf("GET a = seq %d, snapshot %s; want 1 and its snapshot", d.Seq, d.Snapshot)
	}
	before := e.list("")
	tests := []struct {
		name string
		body any
		want int
	}{
		{"no deployment", `{"deployments":[]}`, 400},
		{"malformed", `{"deployments":`, 400},
		{"created RUNNING", deploymentsBody{[]state.Deployment{dep("x", "dev", state.StatusPending), dep("y", "dev", state.StatusRunning)}}, 400},
		{"created COMPLETED", deploymentsBody{[]state.Deployment{dep("x", "dev", state.StatusCompleted)}}, 400},
		{"no kind", deploymentsBody{[]state.Deployment{{ID: "x", Stack: "dev", Status: state.StatusPending}}}, 400},
		{"twice in one request", deploymentsBody{[]state.Deployment{dep("x", "dev", state.StatusPending), dep("x", "prod", state.StatusPending)}}, 400},
		{"an existing ID", deploymentsBody{[]state.Deployment{dep("x", "dev", state.StatusPending), dep("b", "dev", state.StatusPending)}}, 409},
		{"an unknown stack", deploymentsBody{[]state.Deployment{dep("x", "dev", state.StatusPending), dep("y", "nope", state.StatusPending)}}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := e.do("POST", deps, e.token, tt.body); code != tt.want {
				t.Errorf("POST deployments = %d %s, want %d", code, body, tt.want)
			}
			if diff := cmp.Diff(before, e.list("")); diff != "" {
				t.Errorf("a refused create stored something (-before +after):\n%s", diff)
			}
		})
	}
	// Seq goes on from the highest, whatever the failed attempts took from the sequence.
	if got := e.create(dep("d", "prod", state.StatusPending)); got[0].Seq <= 3 {
		t.Errorf("seq after 3 deployments = %d, want more than 3", got[0].Seq)
	}

	lists := []struct{ query, want string }{
		{"", "d c b a"},
		{"?stack=dev", "c a"},
		{"?status=PENDING,PROPOSED", "d b a"},
		{"?stack=prod&status=PENDING", "d"},
		{"?limit=2", "d c"},
		{"?stack=nope", ""},
		{"?kind=deploy", "d c b a"},
		{"?kind=destroy,import", ""},
		{"?before=1", ""}, // no deployment comes before the first
	}
	for _, l := range lists {
		if got := fmt.Sprint(e.list(l.query)); got != "["+l.want+"]" {
			t.Errorf("GET deployments%s = %s, want [%s]", l.query, got, l.want)
		}
	}
	e.must(400, "GET", deps+"?status=DONE", e.token, nil)
	e.must(400, "GET", deps+"?limit=-1", e.token, nil)
	e.must(400, "GET", deps+"?before=last", e.token, nil)
	e.must(404, "GET", deps+"/nope", e.token, nil)
}

func TestClaimDeployments(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("prod")
	e.create(dep("d1", "dev", state.StatusPending), dep("d2", "dev", state.StatusApproved), dep("d3", "dev", state.StatusProposed), dep("p1", "prod", state.StatusPending))
	claim := func(want int, ids ...string) []byte {
		t.Helper()
		return e.must(want, "POST", deps+"/claim", e.token, map[string]any{"ids": ids, "runner": "r1"})
	}
	er := conflict(t, claim(409, "d2"))
	if er.Queued == nil || er.Queued.ID != "d2" || er.Queued.Stack != "dev" || er.Queued.Position != 1 || er.Queued.Ahead.ID != "d1" || er.Queued.Ahead.Snapshot != nil {
		t.Errorf("claim d2 behind d1 = %+v, want queued at 1 behind d1", er)
	}
	er = conflict(t, claim(409, "d3"))
	if want := (&transitionConflict{ID: "d3", Status: state.StatusProposed, To: state.StatusRunning}); !cmp.Equal(er.Transition, want) {
		t.Errorf("claim of a proposal = %+v, want transition %+v", er, want)
	}
	claim(404, "nope")
	claim(400)
	// All or none: p1 could run, d2 cannot.
	claim(409, "p1", "d2")
	if d := e.get("p1"); d.Status != state.StatusPending {
		t.Errorf("p1 after a refused claim = %s, want PENDING", d.Status)
	}
	var resp deploymentsBody
	decode(t, claim(200, "d1", "p1"), &resp)
	now := e.clock.now()
	for _, d := range resp.Deployments {
		if d.Status != state.StatusRunning || !d.StartedAt.Equal(now) || !d.HeartbeatAt.Equal(now) || d.Runner != "r1" {
			t.Errorf("claimed %s = %+v, want RUNNING since %v by r1", d.ID, d, now)
		}
	}
	er = conflict(t, claim(409, "d2"))
	if er.Queued == nil || er.Queued.Position != 1 || er.Queued.Ahead.ID != "d1" || er.Queued.Ahead.Status != state.StatusRunning {
		t.Errorf("claim d2 while d1 runs = %+v, want queued behind RUNNING d1", er)
	}
	er = conflict(t, claim(409, "d1"))
	if er.Transition == nil || er.Transition.Status != state.StatusRunning {
		t.Errorf("claim of a RUNNING deployment = %+v, want a transition conflict", er)
	}

	finish := func(want int, id string, st state.DeploymentStatus) []byte {
		t.Helper()
		return e.must(want, "PATCH", deps+"/"+id, e.token, map[string]any{"status": st, "finishedAt": now.Add(time.Second), "version": 4, "error": ""})
	}
	finish(400, "d1", state.StatusPending)
	finish(404, "nope", state.StatusCompleted)
	var d state.Deployment
	decode(t, finish(200, "d1", state.StatusCompleted), &d)
	if d.Status != state.StatusCompleted || d.Version != 4 || !d.FinishedAt.Equal(now.Add(time.Second)) || d.Stack != "dev" {
		t.Errorf("finished d1 = %+v, want COMPLETED at version 4", d)
	}
	er = conflict(t, finish(409, "d1", state.StatusFailed))
	if want := (&transitionConflict{ID: "d1", Status: state.StatusCompleted, To: state.StatusFailed}); !cmp.Equal(er.Transition, want) {
		t.Errorf("finish a COMPLETED deployment = %+v, want transition %+v", er, want)
	}
	claim(409, "d1")
	claim(200, "d2")
	if d := e.get("d1"); d.Status != state.StatusCompleted {
		t.Errorf("d1 = %s, want COMPLETED", d.Status)
	}
}

func TestDeadWaiters(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.create(waiting("w1", "dev"), dep("d2", "dev", state.StatusPending), waiting("w3", "dev"))
	since := e.clock.now()
	claim := func(want int, id string) {
		t.Helper()
		e.must(want, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{id}, "runner": "r"})
	}
	heartbeat := func(ids ...string) []state.Deployment {
		t.Helper()
		var resp deploymentsBody
		decode(t, e.must(200, "POST", deps+"/heartbeat", e.token, map[string]any{"ids": ids}), &resp)
		return resp.Deployments
	}
	claim(409, "d2")
	e.clock.advance(state.DeadAfter / 2)
	if got := heartbeat("w3", "nope"); len(got) != 1 || got[0].ID != "w3" || !got[0].HeartbeatAt.Equal(e.clock.now()) {
		t.Errorf("heartbeat(w3, nope) = %+v, want w3 renewed", got)
	}
	e.clock.advance(state.DeadAfter/2 + time.Second)
	// w1 has been silent for DeadAfter: the claim aborts it first; w3 renewed in time.
	claim(200, "d2")
	w1 := e.get("w1")
	if wantErr := "its process stopped: no heartbeat since " + since.Format(time.RFC3339); w1.Status != state.StatusAborted || w1.Error != wantErr || !w1.FinishedAt.Equal(e.clock.now()) {
		t.Errorf("w1 = %s %q finished %v, want ABORTED %q at %v", w1.Status, w1.Error, w1.FinishedAt, wantErr, e.clock.now())
	}
	if w3 := e.get("w3"); w3.Status != state.StatusPending {
		t.Errorf("w3 = %s, want PENDING (it sent a heartbeat)", w3.Status)
	}
	// A RUNNING deployment whose runner stops is aborted the same way, by the next claim of its stack.
	e.clock.advance(state.DeadAfter - time.Second)
	heartbeat("w3")
	claim(409, "w3")
	e.clock.advance(2 * time.Second)
	heartbeat("w3")
	claim(200, "w3")
	if d2 := e.get("d2"); d2.Status != state.StatusAborted || d2.FinishedAt.IsZero() {
		t.Errorf("d2 after its runner went silent = %s, want ABORTED", d2.Status)
	}
	// Heartbeats leave terminal deployments alone; the answer is in seq order.
	if got := heartbeat("w3", "w1"); len(got) != 2 || got[0].ID != "w1" || !got[0].HeartbeatAt.Equal(since) || got[1].ID != "w3" {
		t.Errorf("heartbeat(w3, w1) = %+v, want w1 (ABORTED, its old heartbeat) then w3", got)
	}
}

func TestClaimNext(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("prod")
	next := func(want int, stacks ...string) state.Deployment {
		t.Helper()
		var d state.Deployment
		if body := e.must(want, "POST", deps+"/claim-next", e.token, map[string]any{"stacks": stacks, "runner": "agent"}); want == 200 {
			decode(t, body, &d)
		}
		return d
	}
	next(204)
	e.create(waiting("w1", "dev"), dep("d2", "dev", state.StatusApproved), dep("p1", "prod", state.StatusPending), dep("x", "prod", state.StatusProposed))
	// dev's head has a waiting process; prod's head is queued for an agent.
	if d := next(200); d.ID != "p1" || string(d.Snapshot) != `{"s":"p1"}` || d.Runner != "agent" || d.Status != state.StatusRunning {
		t.Errorf("claim-next = %+v, want p1 RUNNING with its snapshot", d)
	}
	next(204)
	next(204, "dev")
	next(204, "nope")
	e.must(200, "POST", deps+"/w1/transition", e.token, map[string]any{"from": []string{"PENDING"}, "to": "ABORTED"})
	next(204, "prod")
	if d := next(200, "prod", "dev"); d.ID != "d2" {
		t.Errorf("claim-next after w1 was aborted = %s, want d2", d.ID)
	}
	next(204)
	// Without a body, every stack.
	e.must(204, "POST", deps+"/claim-next", e.token, nil)
}

func TestTransitions(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("ops")
	e.create(dep("p1", "dev", state.StatusProposed), dep("p2", "dev", state.StatusProposed), dep("r1", "ops", state.StatusPending))
	move := func(want int, id string, body any) state.Deployment {
		t.Helper()
		var d state.Deployment
		if data := e.must(want, "POST", deps+"/"+id+"/transition", e.token, body); want == 200 {
			decode(t, data, &d)
		}
		return d
	}
	at := e.clock.now().Add(-time.Minute)
	if d := move(200, "p1", map[string]any{"from": []string{"PROPOSED"}, "to": "APPROVED", "by": "mallory"}); d.Status != state.StatusApproved || d.ApprovedBy != "alice" || !d.FinishedAt.IsZero() {
		t.Errorf("approve p1 = %+v, want APPROVED by alice", d)
	}
	d := move(200, "p2", map[string]any{"from": []string{"PROPOSED"}, "to": "REJECTED", "error": "too big", "at": at})
	if d.Status != state.StatusRejected || d.RejectedBy != "alice" || d.Error != "too big" || !d.FinishedAt.Equal(at) {
		t.Errorf("reject p2 = %+v, want REJECTED by alice, 'too big', finished at %v", d, at)
	}
	er := conflict(t, e.must(409, "POST", deps+"/p2/transition", e.token, map[string]any{"from": []string{"PROPOSED", "REJECTED"}, "to": "APPROVED"}))
	if want := (&transitionConflict{ID: "p2", Status: state.StatusRejected, To: state.StatusApproved}); !cmp.Equal(er.Transition, want) {
		t.Errorf("approve a rejected proposal = %+v, want transition %+v", er, want)
	}
	move(409, "p1", map[string]any{"from": []string{"PROPOSED"}, "to": "REJECTED"})
	move(400, "p1", map[string]any{"from": []string{"APPROVED"}, "to": "RUNNING"})
	move(400, "p1", map[string]any{"from": []string{"APPROVED"}, "to": "DONE"})
	move(400, "p1", map[string]any{"to": "ABORTED"})
	move(404, "nope", map[string]any{"from": []string{"APPROVED"}, "to": "ABORTED"})

	// An abort request leaves a RUNNING deployment RUNNING; finishing it ABORTED keeps who asked.
	er = conflict(t, e.must(409, "POST", deps+"/r1/abort", e.token, `{}`))
	if want := (&transitionConflict{ID: "r1", Status: state.StatusPending, To: state.StatusAborted}); !cmp.Equal(er.Transition, want) {
		t.Errorf("abort request of a PENDING deployment = %+v, want transition %+v", er, want)
	}
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"r1"}, "runner": "r"})
	decode(t, e.must(200, "POST", deps+"/r1/abort", e.token, nil), &d)
	if d.Status != state.StatusRunning || d.AbortedBy != "alice" {
		t.Errorf("abort request = %+v, want RUNNING with abortedBy alice", d)
	}
	decode(t, e.must(200, "PATCH", deps+"/r1", e.token, map[string]any{"status": "ABORTED", "finishedAt": at, "error": "aborted"}), &d)
	if d.Status != state.StatusAborted || d.AbortedBy != "alice" || d.Error != "aborted" {
		t.Errorf("finish ABORTED = %+v, want ABORTED, abortedBy alice", d)
	}
	e.must(404, "POST", deps+"/nope/abort", e.token, nil)
}

func TestRequireSecondPerson(t *testing.T) {
	e := newEnvWith(t, Options{RequireSecondPerson: true})
	e.createStack("dev")
	tok, err := e.srv.CreateToken(context.Background(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	bob := "token " + tok
	e.create(dep("p1", "dev", state.StatusProposed))
	e.must(403, "POST", deps, e.token, deploymentsBody{[]state.Deployment{dep("a1", "dev", state.StatusApproved)}})
	approve := map[string]any{"from": []string{"PROPOSED"}, "to": "APPROVED"}
	if code, body := e.do("POST", deps+"/p1/transition", e.token, approve); code != 403 || conflict(t, body).Message == "" {
		t.Errorf("alice approves her own proposal = %d %s, want 403 with a message", code, body)
	}
	// Rejecting one's own proposal is fine; approving another's is what the rule wants.
	var d state.Deployment
	decode(t, e.must(200, "POST", deps+"/p1/transition", bob, approve), &d)
	if d.ApprovedBy != "bob" || d.CreatedBy != "alice" {
		t.Errorf("bob approves = %+v, want created by alice, approved by bob", d)
	}
}

func TestDeploymentIdempotency(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	send := func(want int, key, method, path string, body any) []byte {
		t.Helper()
		code, data := e.do(method, path, e.token, body, IdempotencyHeader, key)
		if code != want {
			t.Fatalf("%s %s with key %s = %d %s, want %d", method, path, key, code, data, want)
		}
		return data
	}
	create := deploymentsBody{[]state.Deployment{dep("a", "dev", state.StatusPending), dep("b", "dev", state.StatusPending)}}
	first := send(200, "k1", "POST", deps, create)
	if again := send(200, "k1", "POST", deps, create); !bytes.Equal(bytes.TrimSpace(again), bytes.TrimSpace(first)) {
		t.Errorf("a retried create answered %s, want the first answer %s", again, first)
	}
	if got := e.list(""); len(got) != 2 {
		t.Errorf("deployments after a retried create = %v, want a and b once", got)
	}
	send(422, "k1", "POST", deps+"/claim", map[string]any{"ids": []string{"a"}})
	// A refused request stores no answer: the same key may be sent again once the cause is gone.
	send(409, "k2", "POST", deps+"/claim", map[string]any{"ids": []string{"b"}})
	claimA := send(200, "k3", "POST", deps+"/claim", map[string]any{"ids": []string{"a"}})
	if again := send(200, "k3", "POST", deps+"/claim", map[string]any{"ids": []string{"a"}}); !bytes.Equal(bytes.TrimSpace(again), bytes.TrimSpace(claimA)) {
		t.Errorf("a retried claim answered %s, want %s", again, claimA)
	}
	send(200, "k4", "PATCH", deps+"/a", map[string]any{"status": "COMPLETED"})
	send(200, "k4", "PATCH", deps+"/a", map[string]any{"status": "COMPLETED"})
	next := send(200, "k5", "POST", deps+"/claim-next", map[string]any{})
	if again := send(200, "k5", "POST", deps+"/claim-next", map[string]any{}); !bytes.Equal(bytes.TrimSpace(again), bytes.TrimSpace(next)) {
		t.Errorf("a retried claim-next answered %s, want %s", again, next)
	}
	send(204, "k6", "POST", deps+"/claim-next", map[string]any{})
	// The collector forgets keys after IdempotencyTTL.
	e.clock.advance(IdempotencyTTL + time.Minute)
	if _, err := e.srv.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM svc_idempotency`).Scan(&n); err != nil || n != 0 {
		t.Errorf("idempotency keys after the TTL = %d, %v; want 0", n, err)
	}
}

// TestReplicasDeploymentQueue runs the queue on two replicas of one database: submitters create
// deployments of one stack while agents race claim-next through both replicas and finish what they
// claim. Each deployment must be claimed exactly once, in seq order, never two RUNNING at once.
func TestReplicasDeploymentQueue(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	const first, submitters, agents = 10, 10, 8
	var batch []state.Deployment
	for i := range first {
		batch = append(batch, dep(fmt.Sprintf("b%02d", i), "dev", state.StatusPending))
	}
	c.must(200, 0, "POST", deps, c.token, deploymentsBody{batch})
	var (
		mu       sync.Mutex // guards claimed
		claimed  []state.Deployment
		running  atomic.Int32
		created  atomic.Int32
		finished atomic.Int32
	)
	created.Store(first)
	var wg sync.WaitGroup
	for i := range submitters {
		wg.Go(func() {
			if _, ok := c.check(200, i, "POST", deps, c.token, deploymentsBody{[]state.Deployment{dep(fmt.Sprintf("s%02d", i), "dev", state.StatusPending)}}); ok {
				created.Add(1)
			}
		})
	}
	deadline := time.Now().Add(time.Minute)
	for i := range agents {
		wg.Go(func() {
			for time.Now().Before(deadline) && !t.Failed() {
				code, body, err := c.call(i, "POST", deps+"/claim-next", c.token, map[string]any{"runner": fmt.Sprintf("agent-%d", i)})
				switch {
				case err != nil:
					t.Error(err)
					return
				case code == http.StatusNoContent:
					if finished.Load() == submitters+first {
						return
					}
					time.Sleep(5 * time.Millisecond)
					continue
				case code != http.StatusOK:
					t.Errorf("claim-next (replica %d) = %d %s", i%2, code, body)
					return
				}
				var d state.Deployment
				if err := json.Unmarshal(body, &d); err != nil {
					t.Error(err)
					return
				}
				if n := running.Add(1); n != 1 {
					t.Errorf("%d deployments RUNNING at once after %s was claimed", n, d.ID)
				}
				mu.Lock()
				claimed = append(claimed, d)
				mu.Unlock()
				running.Add(-1) // before the finish: the next claim can succeed only after it
				if _, ok := c.check(200, i+1, "PATCH", deps+"/"+d.ID, c.token, map[string]any{"status": "COMPLETED"}); ok {
					finished.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(claimed) != first+submitters {
		t.Fatalf("%d deployments claimed, want %d", len(claimed), first+submitters)
	}
	ids := map[string]bool{}
	for i, d := range claimed {
		if ids[d.ID] {
			t.Errorf("%s claimed twice", d.ID)
		}
		ids[d.ID] = true
		if i > 0 && d.Seq <= claimed[i-1].Seq {
			t.Errorf("claim %d: %s (seq %d) after %s (seq %d), want seq order", i, d.ID, d.Seq, claimed[i-1].ID, claimed[i-1].Seq)
		}
	}
	var resp deploymentsBody
	decode(t, c.must(200, 1, "GET", deps+"?status=COMPLETED", c.token, nil), &resp)
	if len(resp.Deployments) != first+submitters {
		t.Errorf("%d deployments COMPLETED, want %d", len(resp.Deployments), first+submitters)
	}
}

// TestReplicasClaimRace races explicit claims of the head (ClaimDeployments) with claim-next through two
// replicas: whoever wins, one RUNNING at a time, each deployment once, in seq order.
func TestReplicasClaimRace(t *testing.T) {
	c := newCluster(t)
	for _, s := range []string{"a", "b"} {
		c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": s})
	}
	const n = 20
	var batch []state.Deployment
	for i := range n {
		batch = append(batch, dep(fmt.Sprintf("d%02d", i), []string{"a", "b"}[i%2], state.StatusApproved))
	}
	c.must(200, 0, "POST", deps, c.token, deploymentsBody{batch})
	var (
		mu      sync.Mutex // guards claims
		claims  = map[string][]string{}
		done    atomic.Int32
		running [2]atomic.Int32
	)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for done.Load() < n && !t.Failed() {
				var d state.Deployment
				if i%2 == 0 {
					code, body, err := c.call(i, "POST", deps+"/claim-next", c.token, map[string]any{"runner": "next"})
					if err != nil || (code != 200 && code != 204) {
						t.Errorf("claim-next = %d %s %v", code, body, err)
						return
					}
					if code == 204 {
						continue
					}
					decode(t, body, &d)
				} else {
					// Claim the head of the stack's queue as listed a moment ago.
					stack := []string{"a", "b"}[i/2%2]
					code, body, err := c.call(i, "GET", deps+"?stack="+stack+"&status=APPROVED,RUNNING", c.token, nil)
					var list deploymentsBody
					if err != nil || code != 200 || json.Unmarshal(body, &list) != nil {
						t.Errorf("list = %d %s %v", code, body, err)
						return
					}
					if len(list.Deployments) == 0 {
						continue
					}
					head := list.Deployments[len(list.Deployments)-1]
					code, body, err = c.call(i+1, "POST", deps+"/claim", c.token, map[string]any{"ids": []string{head.ID}, "runner": "explicit"})
					if err != nil || (code != 200 && code != 409) {
						t.Errorf("claim %s = %d %s %v", head.ID, code, body, err)
						return
					}
					if code == 409 {
						continue
					}
					d = head
				}
				k := slices.Index([]string{"a", "b"}, d.Stack)
				if running[k].Add(1) != 1 {
					t.Errorf("two deployments of stack %s RUNNING at once (%s)", d.Stack, d.ID)
				}
				mu.Lock()
				claims[d.Stack] = append(claims[d.Stack], d.ID)
				mu.Unlock()
				running[k].Add(-1)
				if _, ok := c.check(200, i, "PATCH", deps+"/"+d.ID, c.token, map[string]any{"status": "COMPLETED"}); ok {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	want := map[string][]string{}
	for _, d := range batch {
		want[d.Stack] = append(want[d.Stack], d.ID)
	}
	if diff := cmp.Diff(want, claims, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("claims per stack (-want +got):\n%s", diff)
	}
}

// TestTransitionEndpointWalkarounds: the walk-arounds of the state machine that POST …/transition used to
// accept are refused, under --require-second-person, whatever "from" the caller names; so is a direct
// deploy, with 403 and a message that says to propose it.
func TestTransitionEndpointWalkarounds(t *testing.T) {
	e := newEnvWith(t, Options{RequireSecondPerson: true})
	e.createStack("dev")
	e.createStack("ops")
	e.createStack("web")
	plan := dep("g1", "ops", state.StatusPending)
	plan.Kind = state.KindPlan // a plan changes nothing: it may be queued PENDING
	e.create(dep("p1", "dev", state.StatusProposed), plan)
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"g1"}, "runner": "r"})
	e.must(200, "PATCH", deps+"/g1", e.token, map[string]any{"status": "COMPLETED"})
	e.create(func() state.Deployment { d := dep("g2", "ops", state.StatusPending); d.Kind = state.KindPlan; return d }())
	tests := []struct {
		name string
		id   string
		from []string
		to   state.DeploymentStatus
		want int
	}{
		{"the proposer queues her proposal", "p1", []string{"PROPOSED"}, state.StatusPending, 409},
		{"a record of a run that never happened", "g2", []string{"PENDING"}, state.StatusCompleted, 409},
		{"a finished run completed again", "g1", []string{"COMPLETED"}, state.StatusCompleted, 409},
		{"a proposal approved by its proposer", "p1", []string{"PROPOSED"}, state.StatusApproved, 403},
	}
	for _, tt := range tests {
		body := map[string]any{"from": tt.from, "to": tt.to}
		if code, data := e.do("POST", deps+"/"+tt.id+"/transition", e.token, body); code != tt.want {
			t.Errorf("%s: POST %s/transition %v = %d %s, want %d", tt.name, tt.id, body, code, data, tt.want)
		}
	}
	// APPROVED → PROPOSED: approved by bob first.
	tok, err := e.srv.CreateToken(context.Background(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	e.must(200, "POST", deps+"/p1/transition", "token "+tok, map[string]any{"from": []string{"PROPOSED"}, "to": "APPROVED"})
	e.must(409, "POST", deps+"/p1/transition", e.token, map[string]any{"from": []string{"APPROVED"}, "to": "PROPOSED"})
	if d := e.get("p1"); d.Status != state.StatusApproved || d.ApprovedBy != "bob" {
		t.Errorf("p1 after the walk-arounds = %s approved by %q, want APPROVED by bob", d.Status, d.ApprovedBy)
	}

	for _, st := range []state.DeploymentStatus{state.StatusPending, state.StatusApproved} {
		code, body := e.do("POST", deps, e.token, deploymentsBody{[]state.Deployment{dep("direct-"+string(st), "web", st)}})
		er := conflict(t, body)
		if code != 403 || er.Forbidden == nil || !strings.Contains(er.Message, "cdkx deploy --propose") {
			t.Errorf("a deploy created %s under --require-second-person = %d %s, want 403 saying to propose it", st, code, body)
		}
	}
}
