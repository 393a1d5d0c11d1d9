package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ImportState replaces a stack's recorded state by st (typically one `cdkx state export` wrote, from this
// or another backend), in one atomic commit recorded as a deployment of kind "import" whose snapshot is
// the imported state. No provider is called. st must validate (state.Stack.Validate): in particular no
// operation may be pending — settle them where the state came from first. The caller holds the stack's
// lock. It records its own deployment unless opts.Deployments has one for the stack (which the caller
// finishes). It returns the deployment with its outcome.
func ImportState(ctx context.Context, b state.Backend, st *state.Stack, opts Options) (*state.Deployment, error) {
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the imported state of stack %s is not valid; nothing was imported:\n%w", st.Name, err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cur, err := b.GetStack(ctx, st.Name)
	if err != nil {
		return nil, err
	}
	snap, err := json.Marshal(struct {
		Name      string            `json:"name"`
		Resources []*state.Resource `json:"resources"`
	}{st.Name, st.SortedResources()})
	if err != nil {
		return nil, fmt.Errorf("encode the imported state: %w", err)
	}
	sum := sha256.Sum256(snap)
	now := opts.Now().UTC()
	d := opts.Deployments[st.Name]
	owned := d == nil
	if owned {
		d = &state.Deployment{ID: uuid.NewString(), Stack: st.Name, Kind: state.KindImport, Status: state.StatusPending,
			CreatedBy: opts.CreatedBy, CdkxVersion: opts.CdkxVersion, Snapshot: snap, SnapshotHash: hex.EncodeToString(sum[:]),
			CreatedAt: now, StateVersion: cur.Version, Version: cur.Version}
		if err := recordOwn(ctx, b, []*state.Deployment{d}, opts.CreatedBy, now); err != nil {
			return nil, err
		}
	} else {
		c := *d
		d = &c
	}
	changes := []state.Change{{Kind: state.PutStack, Status: st.Status, Outputs: st.Outputs, Dependencies: st.Dependencies}}
	for _, r := range st.SortedResources() {
		changes = append(changes, state.Change{Kind: state.PutResource, Resource: r})
	}
	for _, r := range cur.SortedResources() {
		if _, kept := st.Resources[r.LogicalID]; !kept {
			changes = append(changes, state.Change{Kind: state.DeleteResource, LogicalID: r.LogicalID})
		}
	}
	ev := state.Event{DeploymentID: d.ID, Time: opts.Now().UTC(), Stack: st.Name, Type: StackType, Status: string(ImportComplete),
		Reason: fmt.Sprintf("%d resource(s) imported, replacing %d", len(st.Resources), len(cur.Resources))}
	v, err := b.Commit(context.WithoutCancel(ctx), d.ID, st.Name, changes, []state.Event{ev})
	status, msg := state.StatusCompleted, ""
	if err != nil {
		status, msg, v = state.StatusFailed, err.Error(), cur.Version
	}
	d.Status, d.FinishedAt, d.Version, d.Error = status, opts.Now().UTC(), v, msg
	if owned {
		if ferr := b.FinishDeployment(context.WithoutCancel(ctx), d.ID, opts.CreatedBy, status, d.FinishedAt, v, msg); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		return d, fmt.Errorf("import state of stack %s: %w", st.Name, err)
	}
	return d, nil
}
