package operation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestAgentServeOnce: with once, Serve runs every queued deployment, counts the ones that did not
// complete, tells of each, and returns when the queues are empty.
func TestAgentServeOnce(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ok := record(t, fx, writeAssembly(t, fx, 1, "good", ""), state.StatusPending, "")
	bad := record(t, fx, writeAssembly(t, fx, 1, "bad", ""), state.StatusPending, "")
	fx.cloud.Fail = func(op, _ string) error {
		if op == "update" {
			return errors.New("refused")
		}
		return nil
	}
	got := map[string]state.DeploymentStatus{}
	served, err := operation.Agent{Env: fx.env, Poll: func() (<-chan time.Time, func()) {
		t.Error("Serve(once) polled")
		return nil, func() {}
	}, OnRan: func(d *state.Deployment, _ *engine.Result, _ time.Duration) { got[d.ID] = d.Status }}.Serve(context.Background(), true)
	if err != nil {
		t.Fatalf("Serve(once) = %v", err)
	}
	if want := (operation.Served{Ran: 2, Failed: 1}); served != want {
		t.Errorf("Serve(once) = %+v, want %+v", served, want)
	}
	want := map[string]state.DeploymentStatus{ok.ID: state.StatusCompleted, bad.ID: state.StatusFailed}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnRan (-want +got):\n%s", diff)
	}
}

// TestAgentServePolls: idle, Serve waits for the next tick of its Poll and then runs what was queued
// meanwhile; it returns the context's error when interrupted while idle.
func TestAgentServePolls(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	a := writeAssembly(t, fx, 1, "v", "")
	tick := make(chan time.Time)
	polling := make(chan struct{})
	ran := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		served operation.Served
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := operation.Agent{Env: fx.env,
			Poll: func() (<-chan time.Time, func()) {
				close(polling)
				return tick, func() {}
			},
			OnRan: func(d *state.Deployment, _ *engine.Result, _ time.Duration) { ran <- d.ID }}.Serve(ctx, false)
		done <- outcome{s, err}
	}()
	<-polling // the queues were empty: Serve is idle
	d := record(t, fx, a, state.StatusPending, "")
	tick <- time.Now()
	if got := <-ran; got != d.ID {
		t.Errorf("ran %s, want %s", got, d.ID)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) || o.served != (operation.Served{Ran: 1}) {
		t.Errorf("Serve() after cancel = %+v, %v; want ran 1, context.Canceled", o.served, o.err)
	}
}
