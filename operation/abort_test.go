package operation_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestAbortEndsOnlyItsDeployment: a deploy of two independent stacks, S and T, in one run; T's deployment
// is aborted while its first resource is being created. T ends ABORTED (its second resource never
// starts), S completes, the run says "Deployment ID aborted by WHO" and not the Ctrl-C notice.
func TestAbortEndsOnlyItsDeployment(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{
		"manifest.json": `{"version": "1.0.0", "artifacts": {"S": {"type": "cdkx:stack", "properties": {"templateFile": "S.json"}},
			"T": {"type": "cdkx:stack", "properties": {"templateFile": "T.json"}}}}`,
		"S.json": `{"resources": {"SR": {"type": "` + enginetest.CloudType + `", "provider": "fake", "properties": {"key": "s", "value": "v"}}}}`,
		"T.json": `{"resources": {"TR1": {"type": "` + enginetest.CloudType + `", "provider": "fake", "properties": {"key": "t1", "value": "v"}},
			"TR2": {"type": "` + enginetest.CloudType + `", "provider": "fake", "properties": {"key": "t2", "value": {"ref": "TR1", "attr": "id"}}}}}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, _, ds := assembly.LoadWithFiles(dir)
	if a == nil {
		t.Fatalf("LoadWithFiles() = %v", ds)
	}
	a, g, ds := operation.Validate(a, ds, fx.env.Providers)
	if a == nil {
		t.Fatalf("Validate() = %v", ds)
	}
	var mu sync.Mutex
	var notices []string
	seen := make(chan struct{})
	fx.env.Notice = func(line string) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, line)
		if strings.HasPrefix(line, "Deployment ") && strings.Contains(line, " aborted by bob@laptop") {
			close(seen)
		}
	}
	interrupted := false
	fx.env.OnInterrupt = func(int64) { interrupted = true }
	var tID string
	fx.cloud.Fail = func(op, id string) error {
		if op != "create" || id != "TR1" {
			return nil
		}
		running, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: "T", Statuses: []state.DeploymentStatus{state.StatusRunning}})
		if err != nil || len(running) != 1 {
			return errors.New("no RUNNING deployment of T")
		}
		tID = running[0].ID
		if _, err := fx.env.Backend.RequestAbort(ctx, tID, "bob@laptop", time.Now()); err != nil {
			return err
		}
		select { // the run sees the request at its next heartbeat, before TR1 is done
		case <-seen:
		case <-time.After(30 * time.Second):
			t.Error("no notice of the abort within 30 s")
		}
		return nil
	}
	res, _, err := operation.Deploy{Env: fx.env, Assembly: a, Graph: g, Selection: operation.Selection{Stacks: []string{"S", "T"}}}.Run(ctx)
	var ae *operation.AbortedError
	if !errors.As(err, &ae) || ae.ID != tID || ae.By != "bob@laptop" {
		t.Fatalf("Deploy() = %v, want the *AbortedError of %s by bob@laptop", err, tID)
	}
	if res == nil || res.Deployments["S"] == nil || res.Deployments["S"].Status != state.StatusCompleted {
		t.Fatalf("Deploy() result = %+v, want S's deployment COMPLETED", res)
	}
	for stack, want := range map[string]state.DeploymentStatus{"S": state.StatusCompleted, "T": state.StatusAborted} {
		got, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: stack})
		if err != nil || len(got) != 1 || got[0].Status != want {
			t.Errorf("deployments of %s = %+v, %v; want one %s", stack, got, err, want)
			continue
		}
		if want == state.StatusAborted && !strings.Contains(got[0].Error, "aborted by bob@laptop") {
			t.Errorf("T's deployment error = %q, want it to say who aborted it", got[0].Error)
		}
	}
	if keys := keyed(fx); keys["s"] != "v" || keys["t1"] == "" || keys["t2"] != "" {
		t.Errorf("objects = %v, want s and t1, not t2 (it waited for TR1 and the abort)", keys)
	}
	mu.Lock()
	defer mu.Unlock()
	if interrupted {
		t.Errorf("the run printed the Ctrl-C notice for an abort")
	}
	want := "Deployment " + tID + " aborted by bob@laptop"
	found := false
	for _, n := range notices {
		found = found || n == want
	}
	if !found {
		t.Errorf("notices = %q, want %q", notices, want)
	}
}

// TestAbortWhileWaiting: a deploy of S and T waits behind a run of S; T's deployment is aborted meanwhile.
// The deploy ends with the *AbortedError (nothing ran), and S's deployment, which it cannot run without
// the plan it shared with T, is recorded ABORTED, "not run", naming T's deployment and who aborted it.
func TestAbortWhileWaiting(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	l := writeTwoStacks(t, fx, "a", "a")
	busy := &state.Deployment{ID: "busy-0001", Stack: "S", Kind: state.KindDeploy, Status: state.StatusPending, CreatedBy: "x"}
	if err := fx.env.Backend.CreateDeployments(ctx, []*state.Deployment{busy}); err != nil {
		t.Fatal(err)
	}
	if err := fx.env.Backend.ClaimDeployments(ctx, []string{busy.ID}, "someone else", time.Now()); err != nil {
		t.Fatal(err)
	}
	fx.env.Lock.Timeout = time.Minute
	var tID string
	fx.env.Lock.Queued = func(q *state.QueuedError) {
		if tID != "" {
			return
		}
		ds, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: "T", Statuses: []state.DeploymentStatus{state.StatusPending}})
		if err != nil || len(ds) != 1 {
			t.Errorf("T's PENDING deployments: %v, %v", ds, err)
			return
		}
		tID = ds[0].ID
		if _, err := fx.env.Backend.UpdateDeployment(ctx, tID, state.Transition{From: []state.DeploymentStatus{state.StatusPending},
			To: state.StatusAborted, By: "bob@laptop", Error: "aborted by bob@laptop", At: time.Now()}); err != nil {
			t.Error(err)
		}
	}
	_, _, err := operation.Deploy{Env: fx.env, Assembly: l.Assembly, Selection: operation.Selection{Stacks: []string{"S", "T"}}}.Run(ctx)
	var ae *operation.AbortedError
	if !errors.As(err, &ae) || ae.ID != tID {
		t.Fatalf("Deploy() = %v, want the *AbortedError of T's deployment %s", err, tID)
	}
	s, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: "S", Statuses: []state.DeploymentStatus{state.StatusAborted}})
	if err != nil || len(s) != 1 || s[0].Error != "not run: deployment "+tID+", of the same run, was aborted by bob@laptop" {
		t.Errorf("S's ABORTED deployments: %+v, %v; want one, not run, naming %s", s, err, tID)
	}
	if n := len(fx.cloud.Objects()); n != 0 {
		t.Errorf("%d objects created, want none", n)
	}
}
