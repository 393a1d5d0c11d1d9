package operation

import (
	"context"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// StateImport makes exported states the recorded state of their stacks (cdkx state import): each stack in
// one atomic commit, recorded as a deployment of kind import, under the stack's lock (Env.Lock). No
// provider is called; it uses Env's Backend, Lock, Now, CreatedBy and Version.
type StateImport struct {
	Env
	// Stacks are the states to import, in order.
	Stacks []*state.Stack
	// OnImported, when set, is told of each stack imported, with its import deployment.
	OnImported func(*state.Stack, *state.Deployment)
}

// Run imports the stacks one by one and returns their deployments. An invalid state (one with an operation
// pending) imports nothing of that stack and ends the run; the stacks imported before stay imported.
// Errors: *state.LockedError when a lock is held past Env.Lock.Timeout, engine.ImportState's, or a lock
// lost meanwhile.
func (i StateImport) Run(ctx context.Context) ([]*state.Deployment, error) {
	var out []*state.Deployment
	for _, st := range i.Stacks {
		d, err := i.one(ctx, st)
		if err != nil {
			return out, err
		}
		out = append(out, d)
		if i.OnImported != nil {
			i.OnImported(st, d)
		}
	}
	return out, nil
}

func (i StateImport) one(ctx context.Context, st *state.Stack) (_ *state.Deployment, err error) {
	release, err := i.lock(ctx, []string{st.Name}, "state import")
	if err != nil {
		return nil, err
	}
	defer releaseInto(release, &err)
	return engine.ImportState(ctx, i.Backend, st, engine.Options{Now: i.Now, CreatedBy: i.CreatedBy, CdkxVersion: i.Version})
}
