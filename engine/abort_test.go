package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestStackAborted: the deployment of one stack aborted (its Options.StackContext cancelled) ends only that stack and
// the stacks that wait for it (ABORTED, their steps not started, nothing rolled back); an independent
// stack deploys as if nothing happened.
func TestStackAborted(t *testing.T) {
	t.Parallel()
	// Net ← App (reads Net's output); Other is independent.
	mk := func() *assembly.Assembly {
		net := &assembly.Stack{ID: "Net", Outputs: map[string]*assembly.Output{
			"NetID": {Key: "NetID", Value: map[string]any{"ref": "N", "attr": "id"}, Path: "outputs.NetID"}},
			Resources: []*assembly.Resource{{LogicalID: "N", Type: enginetest.CloudType, Provider: "fake", Path: "resources.N",
				Properties: resource.Properties{"key": "n", "value": "n"}}}}
		app := &assembly.Stack{ID: "App", Dependencies: []string{"Net"}, Outputs: map[string]*assembly.Output{},
			Resources: []*assembly.Resource{{LogicalID: "S", Type: enginetest.CloudType, Provider: "fake", Path: "resources.S",
				Properties: resource.Properties{"key": "s", "value": map[string]any{"stackRef": "Net", "outputKey": "NetID"}}}}}
		other := &assembly.Stack{ID: "Other", Outputs: map[string]*assembly.Output{},
			Resources: []*assembly.Resource{{LogicalID: "O", Type: enginetest.CloudType, Provider: "fake", Path: "resources.O",
				Properties: resource.Properties{"key": "o", "value": "o"}}}}
		return &assembly.Assembly{Stacks: []*assembly.Stack{net, app, other}}
	}
	const why = "deployment d-1 was aborted by bob@laptop"
	tests := []struct {
		name    string
		aborted []string
		// want is each stack's deployment status and, when ABORTED, the start of its error.
		want        map[string]string
		keys        []string // objects created, by key
		interrupted bool
	}{
		{"none", nil, map[string]string{"Net": "COMPLETED", "App": "COMPLETED", "Other": "COMPLETED"}, []string{"n", "o", "s"}, false},
		{"Other", []string{"Other"}, map[string]string{"Net": "COMPLETED", "App": "COMPLETED", "Other": "ABORTED " + why}, []string{"n", "s"}, true},
		{"Net, which App waits for", []string{"Net"},
			map[string]string{"Net": "ABORTED " + why, "App": "ABORTED not finished: it waits for stack Net", "Other": "COMPLETED"}, []string{"o"}, true},
		{"App, which waits for Net", []string{"App"}, map[string]string{"Net": "COMPLETED", "App": "ABORTED " + why, "Other": "COMPLETED"}, []string{"n", "o"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cloud := enginetest.NewCloud()
			b := openBackend(t)
			ctxs := map[string]context.Context{}
			for _, stack := range []string{"Net", "App", "Other"} {
				sctx, cancel := context.WithCancelCause(t.Context())
				if slices.Contains(tt.aborted, stack) {
					cancel(errors.New(why))
				}
				t.Cleanup(func() { cancel(nil) })
				ctxs[stack] = sctx
			}
			res, _ := deployWith(t, mk(), b, engine.NewRegistry(cloud), engine.Options{StackContext: func(stack string) context.Context { return ctxs[stack] }})
			got := map[string]string{}
			for stack, d := range res.Deployments {
				got[stack] = string(d.Status)
				if d.Status == state.StatusAborted {
					got[stack] += " " + d.Error
				}
			}
			for stack, w := range tt.want {
				if !strings.HasPrefix(got[stack], w) {
					t.Errorf("deployment of %s = %q, want %q…", stack, got[stack], w)
				}
				stored, err := b.ListDeployments(t.Context(), state.DeploymentFilter{Stack: stack})
				if err != nil || len(stored) != 1 || !strings.HasPrefix(string(stored[0].Status)+" "+stored[0].Error, strings.TrimSuffix(w, " ")) {
					t.Errorf("stored deployment of %s = %+v, %v; want %q…", stack, stored, err, w)
				}
			}
			var keys []string
			for _, o := range cloud.Objects() {
				keys = append(keys, o["key"].(string))
			}
			slices.Sort(keys)
			if diff := cmp.Diff(tt.keys, keys, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("objects created (-want +got):\n%s", diff)
			}
			if res.Interrupted != tt.interrupted || len(res.Failures) != 0 {
				t.Errorf("Result: Interrupted %v, failures %v; want Interrupted %v and no failure", res.Interrupted, res.Failures, tt.interrupted)
			}
		})
	}
}

// TestStackAbortedWhileWaitingForSlots: 20 independent resources at concurrency 1, the stack's context
// cancelled during the first provider call: the steps waiting for the slot never start (exactly one
// object is created), the deployment ends ABORTED with the cause.
func TestStackAbortedWhileWaitingForSlots(t *testing.T) {
	t.Parallel()
	var rs []*assembly.Resource
	for i := range 20 {
		rs = append(rs, fakeRes(fmt.Sprintf("R%02d", i), enginetest.CloudType, fmt.Sprintf("k%02d", i), "v"))
	}
	a := &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "Many", Outputs: map[string]*assembly.Output{}, Resources: rs}}}
	sctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	cloud := enginetest.NewCloud()
	cloud.Fail = func(op, _ string) error {
		if op == "create" {
			cancel(errors.New("deployment d-9 was aborted by carol"))
		}
		return nil
	}
	res, _ := deployWith(t, a, openBackend(t), engine.NewRegistry(cloud), engine.Options{Concurrency: 1,
		StackContext: func(string) context.Context { return sctx }})
	if n := len(cloud.Objects()); n != 1 {
		t.Errorf("%d objects created, want 1 (the call in flight when the stack was aborted)", n)
	}
	d := res.Deployments["Many"]
	if d.Status != state.StatusAborted || d.Error != "deployment d-9 was aborted by carol" || res.NotStarted != 19 {
		t.Errorf("deployment %s %q, %d not started; want ABORTED with the cause, 19 not started", d.Status, d.Error, res.NotStarted)
	}
}
