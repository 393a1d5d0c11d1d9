package operation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestReadAhead: the stacks read ahead are those the backend returns (every stack with state when none
// is named), and an open error comes back from Wait; Abandon after a failed open does not touch a backend.
func TestReadAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	fx.deploy(t, assemblyOf(2))
	want, err := fx.env.Backend.GetStack(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	open := func(context.Context) (state.Backend, error) { return fx.env.Backend, nil }
	tests := []struct {
		name  string
		names []string
		want  map[string]*state.Stack
	}{
		{"every stack with state", nil, map[string]*state.Stack{"S": want}},
		{"named", []string{"S", "T"}, map[string]*state.Stack{"S": want, "T": state.NewStack("T")}},
	}
	for _, tt := range tests {
		b, got, err := operation.StartReadAhead(ctx, open, tt.names).Wait()
		if err != nil || b != fx.env.Backend {
			t.Fatalf("%s: Wait() = %v, %v; want the backend, nil", tt.name, b, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: stacks read ahead (-want +got):\n%s", tt.name, diff)
		}
	}

	boom := errors.New("boom")
	failing := func(context.Context) (state.Backend, error) { return (*nilBackend)(nil), boom }
	if _, _, err := operation.StartReadAhead(ctx, failing, nil).Wait(); !errors.Is(err, boom) {
		t.Errorf("Wait() after a failed open = %v, want %v", err, boom)
	}
	operation.StartReadAhead(ctx, failing, nil).Abandon() // a typed nil is not closed
}

// nilBackend is a backend type whose nil pointer an open may return with its error.
type nilBackend struct{ state.Backend }

// TestDiffTakesStateReadAhead: Diff plans against the stacks in Read, not the backend's.
func TestDiffTakesStateReadAhead(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.deploy(t, writeAssembly(t, fx, 2, "v1", "").Assembly)
	a := writeAssembly(t, fx, 2, "v1", "")
	plan, err := operation.Diff{Env: fx.env, Assembly: a.Assembly, Selection: operation.Selection{Stacks: []string{"S"}},
		Read: map[string]*state.Stack{"S": state.NewStack("S")}}.Run(ctx)
	if err != nil {
		t.Fatalf("Diff() = %v", err)
	}
	if got, want := counts(plan), [4]int{2, 0, 0, 0}; got != want {
		t.Errorf("Diff() counts with an empty stack read ahead = %v, want %v", got, want)
	}
}
