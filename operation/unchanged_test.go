package operation_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// writeTwoStacks writes an assembly of two independent stacks, S and T, with one resource each (values s
// and t, keys kS and kT) and returns it loaded and validated.
func writeTwoStacks(t *testing.T, fx *fixture, s, tv string) loaded {
	t.Helper()
	dir := t.TempDir()
	res := func(stack, v string) string {
		return fmt.Sprintf(`{"resources": {"R": {"type": %q, "provider": "fake", "properties": {"key": "k%s", "value": %q}}}}`, enginetest.CloudType, stack, v)
	}
	files := map[string]string{
		"manifest.json": `{"version": "1.0.0", "artifacts": {"S": {"type": "cdkx:stack", "properties": {"templateFile": "S.json"}},
			"T": {"type": "cdkx:stack", "properties": {"templateFile": "T.json"}}}}`,
		"S.json": res("S", s),
		"T.json": res("T", tv),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, read, ds := assembly.LoadWithFiles(dir)
	if a == nil {
		t.Fatalf("LoadWithFiles() = %v", ds)
	}
	a, _, ds = operation.Validate(a, ds, fx.env.Providers)
	if a == nil {
		t.Fatalf("Validate() = %v", ds)
	}
	return loaded{a, read}
}

// stacksOf lists the stacks of ds.
func stacksOf(ds []*state.Deployment) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Stack)
	}
	return out
}

// TestNoDeploymentForUnchangedStacks: after S and T are deployed, a proposal, a --no-wait queueing and a
// deploy record a deployment only for the stack the plan changes, none when nothing changes; a deploy
// runs only the changed stack.
func TestNoDeploymentForUnchangedStacks(t *testing.T) {
	ctx := context.Background()
	both := operation.Selection{Stacks: []string{"S", "T"}}
	tests := []struct {
		name   string
		s, t   string
		status state.DeploymentStatus
		want   []string
	}{
		{"propose, nothing changed", "a", "a", state.StatusProposed, []string{}},
		{"propose, T changed", "a", "b", state.StatusProposed, []string{"T"}},
		{"propose, both changed", "b", "b", state.StatusProposed, []string{"S", "T"}},
		{"no-wait, nothing changed", "a", "a", state.StatusPending, []string{}},
		{"no-wait, S changed", "b", "a", state.StatusPending, []string{"S"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, 0)
			first := writeTwoStacks(t, fx, "a", "a")
			if _, _, err := (operation.Deploy{Env: fx.env, Assembly: first.Assembly, Selection: both}).Run(ctx); err != nil {
				t.Fatal(err)
			}
			next := writeTwoStacks(t, fx, tt.s, tt.t)
			ds, plan, err := operation.Record{Env: fx.env, Assembly: next.Assembly, Files: next.files, Selection: both,
				Status: tt.status, Kind: state.KindDeploy, RunHere: true}.Run(ctx)
			if err != nil || plan == nil {
				t.Fatalf("Record() = %v, %v", plan, err)
			}
			if diff := cmp.Diff(tt.want, stacksOf(ds)); diff != "" {
				t.Errorf("recorded deployments' stacks (-want +got):\n%s", diff)
			}
			all, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{Statuses: []state.DeploymentStatus{tt.status}})
			if err != nil || len(all) != len(tt.want) {
				t.Errorf("ListDeployments(%s) = %d deployments, %v; want %d", tt.status, len(all), err, len(tt.want))
			}
		})
	}

	t.Run("deploy", func(t *testing.T) {
		fx := newFixture(t, 0)
		if _, _, err := (operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "a", "a").Assembly, Selection: both}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		count := func() int {
			all, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			return len(all)
		}
		before := count()
		res, plan, err := operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "a", "a").Assembly, Selection: both}.Run(ctx)
		if err != nil || res != nil || plan == nil {
			t.Fatalf("Deploy(nothing changed) = %v, %v, %v; want no result, the plan and no error", res, plan, err)
		}
		if n := count(); n != before {
			t.Errorf("Deploy(nothing changed) recorded %d deployment(s), want none", n-before)
		}
		res, plan, err = operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "a", "c").Assembly, Selection: both}.Run(ctx)
		if err != nil || res == nil {
			t.Fatalf("Deploy(T changed) = %v, %v", res, err)
		}
		if got := slices.Sorted(maps.Keys(res.Deployments)); !slices.Equal(got, []string{"T"}) {
			t.Errorf("Deploy(T changed) ran deployments of %v, want [T]", got)
		}
		if !slices.Equal(plan.Stacks, []string{"S", "T"}) {
			t.Errorf("Deploy(T changed) returned a plan of %v, want the whole selection [S T]", plan.Stacks)
		}
		if n := count(); n != before+1 {
			t.Errorf("Deploy(T changed) recorded %d deployment(s), want 1", n-before)
		}
		if diff := cmp.Diff(map[string]string{"kS": "a", "kT": "c"}, keyed(fx)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})

	t.Run("no-wait, nothing changed, but a busy queue or lock", func(t *testing.T) {
		fx := newFixture(t, 0)
		l := writeTwoStacks(t, fx, "a", "a")
		if _, _, err := (operation.Deploy{Env: fx.env, Assembly: l.Assembly, Selection: both}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		// Another run may change S and T before this one's turn: each is recorded, to be planned again then.
		if err := fx.env.Backend.CreateDeployments(ctx, []*state.Deployment{{ID: "queued-1", Stack: "S", Kind: state.KindDeploy, Status: state.StatusPending}}); err != nil {
			t.Fatal(err)
		}
		if err := fx.env.Backend.Lock(ctx, state.LockInfo{ID: "other", Stack: "T", Operation: "deploy", StartedAt: time.Now(), HeartbeatAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			status state.DeploymentStatus
			want   []string
		}{{state.StatusPending, []string{"S", "T"}}, {state.StatusProposed, []string{}}} {
			ds, _, err := operation.Record{Env: fx.env, Assembly: l.Assembly, Files: l.files, Selection: both, Status: tt.status,
				Kind: state.KindDeploy, RunHere: true}.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, stacksOf(ds)); diff != "" {
				t.Errorf("Record(%s) with S queued behind another and T locked: stacks (-want +got):\n%s", tt.status, diff)
			}
		}
	})

	t.Run("deploy --target in the unchanged stack", func(t *testing.T) {
		fx := newFixture(t, 0)
		if _, _, err := (operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "a", "a").Assembly, Selection: both}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		targeted := both
		targeted.Targets = []string{"T/R"}
		res, _, err := operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "b", "a").Assembly, Selection: targeted}.Run(ctx)
		if err != nil || res != nil {
			t.Fatalf("Deploy(--target T/R, only S changed) = %v, %v; want nothing run", res, err)
		}
		if diff := cmp.Diff(map[string]string{"kS": "a", "kT": "a"}, keyed(fx)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
		targeted.Targets = []string{"S/R"}
		if res, _, err = (operation.Deploy{Env: fx.env, Assembly: writeTwoStacks(t, fx, "b", "a").Assembly, Selection: targeted}).Run(ctx); err != nil || res == nil {
			t.Fatalf("Deploy(--target S/R) = %v, %v", res, err)
		}
		if got := slices.Sorted(maps.Keys(res.Deployments)); !slices.Equal(got, []string{"S"}) {
			t.Errorf("Deploy(--target S/R) ran deployments of %v, want [S]", got)
		}
		if diff := cmp.Diff(map[string]string{"kS": "b", "kT": "a"}, keyed(fx)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
}

// keyed returns the fake cloud's objects' values by key.
func keyed(fx *fixture) map[string]string {
	out := map[string]string{}
	for _, p := range fx.cloud.Objects() {
		out[fmt.Sprint(p["key"])] = fmt.Sprint(p["value"])
	}
	return out
}

// TestRunInvalidSnapshotSaysWhy: a deployment whose snapshot no longer validates (here: no provider for
// its resource type) is refused with an error that lists the diagnostics, and an agent's claim of it is
// recorded FAILED with that error.
func TestRunInvalidSnapshotSaysWhy(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, 0)
	d := approve(t, fx, record(t, fx, writeAssembly(t, fx, 1, "a", ""), state.StatusProposed, ""))
	env := fx.env
	env.Providers = engine.NewRegistry() // this cdkx knows no provider of the snapshot's type
	_, _, err := operation.RunDeployment{Env: env, Deployment: d}.Run(ctx)
	var se *operation.SnapshotInvalidError
	if !errors.As(err, &se) || se.ID != d.ID {
		t.Fatalf("RunDeployment() = %v, want a *SnapshotInvalidError of %s", err, d.ID)
	}
	if !strings.Contains(err.Error(), "does not validate") || !strings.Contains(err.Error(), enginetest.CloudType) {
		t.Errorf("RunDeployment() = %q, want it to say that the snapshot does not validate and why (%s)", err, enginetest.CloudType)
	}
	claimed, err := env.Backend.ClaimNext(ctx, nil, "agent", time.Now())
	if err != nil || claimed == nil {
		t.Fatalf("ClaimNext() = %v, %v", claimed, err)
	}
	if _, _, err := (operation.RunDeployment{Env: env, Deployment: claimed, Claimed: true}).Run(ctx); !errors.As(err, &se) {
		t.Fatalf("RunDeployment(claimed) = %v, want a *SnapshotInvalidError", err)
	}
	got, err := env.Backend.GetDeployment(ctx, d.ID)
	if err != nil || got.Status != state.StatusFailed || !strings.Contains(got.Error, enginetest.CloudType) {
		t.Errorf("after the claimed run: %s %q, %v; want FAILED saying why", got.Status, got.Error, err)
	}
}

// TestAgentAbortsDeadRunnerAtOnce: a deployment RUNNING for a process of this machine that is gone (a
// killed agent) is recorded ABORTED by the next agent's step, which then runs the deployment queued
// behind it, without waiting state.DeadAfter for its heartbeat to age; a runner of another machine is
// judged by its heartbeat alone.
func TestAgentAbortsDeadRunnerAtOnce(t *testing.T) {
	if engine.MachineID() == "" {
		t.Skip("this system does not identify itself (/proc)")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := cmd.Process.Pid
	tests := []struct {
		name    string
		runner  string
		aborted bool
	}{
		{"this machine, process gone", fmt.Sprintf("t@h pid %d on %s", gone, engine.MachineID()), true},
		{"this machine, process alive", fmt.Sprintf("t@h pid %d on %s", os.Getpid(), engine.MachineID()), false},
		{"another machine", fmt.Sprintf("t@h pid %d on another-boot/pid:[1]", gone), false},
		{"no machine", "alice", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fx := newFixture(t, 0)
			first := approve(t, fx, record(t, fx, writeAssembly(t, fx, 1, "a", ""), state.StatusProposed, ""))
			second := approve(t, fx, record(t, fx, writeAssembly(t, fx, 1, "b", ""), state.StatusProposed, ""))
			if err := fx.env.Backend.ClaimDeployments(ctx, []string{first.ID}, tt.runner, time.Now()); err != nil {
				t.Fatal(err)
			}
			d, _, err := operation.Agent{Env: fx.env}.Step(ctx)
			got, gerr := fx.env.Backend.GetDeployment(ctx, first.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if !tt.aborted {
				if !errors.Is(err, operation.ErrNoDeployment) || got.Status != state.StatusRunning {
					t.Errorf("Agent.Step() = %v, %v; first %s; want ErrNoDeployment and first still RUNNING", d, err, got.Status)
				}
				return
			}
			if err != nil || d == nil || d.ID != second.ID || d.Status != state.StatusCompleted {
				t.Fatalf("Agent.Step() = %+v, %v; want %s run to COMPLETED", d, err, second.ID)
			}
			if got.Status != state.StatusAborted || !strings.Contains(got.Error, "is gone") {
				t.Errorf("the dead runner's deployment: %s %q; want ABORTED saying its process is gone", got.Status, got.Error)
			}
		})
	}
}
