package operation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// PlanRecords summarizes p per stack, for deployment records and for everything that shows a plan (diff,
// its --json, deployments show): counts, and one step per resource the plan changes, in the plan's order,
// with the changed properties' old and new values, a create's inputs, the replacement's order, the harm
// the type's schema declares, and a digest of the change. Write-only values appear only as
// resource.Sensitive, and enter the digest only through their recorded fingerprint.
func PlanRecords(p *planner.Plan) map[string]*state.Plan {
	out := map[string]*state.Plan{}
	steps := map[string]int{} // each stack's number of steps: its Steps are allocated once
	for _, s := range append(slices.Clone(p.Steps), p.Deletes...) {
		if s.Op != planner.OpSame {
			steps[s.Stack]++
		}
	}
	for _, name := range p.Stacks {
		out[name] = &state.Plan{Steps: make([]state.PlanStep, 0, steps[name]), Values: true, Reads: readVersions(p, name)}
	}
	for _, s := range append(slices.Clone(p.Steps), p.Deletes...) {
		rec := out[s.Stack]
		if rec == nil {
			rec = &state.Plan{Steps: []state.PlanStep{}, Values: true}
			out[s.Stack] = rec
		}
		switch s.Op {
		case planner.OpSame:
			rec.Same++
			continue
		case planner.OpCreate:
			rec.Create++
		case planner.OpUpdate:
			rec.Update++
		case planner.OpReplace:
			rec.Replace++
		case planner.OpDelete:
			rec.Delete++
		}
		rec.Steps = append(rec.Steps, planStep(s))
	}
	return out
}

func planStep(s *planner.Step) state.PlanStep {
	ps := state.PlanStep{Resource: s.Key(), Stack: s.Stack, LogicalID: s.LogicalID, Type: s.Type, Op: string(s.Op),
		Reason: s.Reason}
	var oldID string
	if s.Old != nil {
		oldID = s.Old.PhysicalID
	}
	if s.Object != nil {
		oldID = s.Object.PhysicalID
		ps.Reason = fmt.Sprintf("old object %s, %s", oldID, s.Reason)
	}
	ps.PhysicalID = oldID
	type change struct {
		Path     string `json:"path"`
		Old, New any
	}
	var changes []change
	for _, c := range s.Changes {
		path := "properties." + c.Name
		ps.Paths = append(ps.Paths, path)
		o, n, digestNew := c.Old, c.New, c.New
		prop := s.Schema.Properties[c.Name]
		if prop.WriteOnly {
			o, n, digestNew = sensitive(o), sensitive(n), resource.Sensitive
		}
		changes = append(changes, change{path, c.Old, digestNew})
		ps.Changes = append(ps.Changes, state.PlanChange{Name: c.Name, Old: o, New: n, CreateOnly: c.CreateOnly})
		if s.Op == planner.OpUpdate && prop.UpdateNote != "" && !slices.Contains(ps.Notes, prop.UpdateNote) {
			ps.Notes = append(ps.Notes, prop.UpdateNote)
		}
	}
	switch s.Op {
	case planner.OpCreate:
		ps.Inputs = s.Inputs // shared, not copied (read only): most types have no write-only property
		if s.Schema.HasWriteOnly() {
			ps.Inputs = resource.Redact(s.Schema, s.Inputs)
		}
		// Nothing to start from: the resource and op say it all (and a 100k-resource first deploy need not
		// hash 100k steps).
		return ps
	case planner.OpReplace:
		ps.Replacement = state.ReplaceCreateFirst
		if s.DeleteBeforeReplace {
			ps.Replacement = state.ReplaceDeleteFirst
		}
		if s.Schema.ReplaceNote != "" {
			ps.Notes = append(ps.Notes, s.Schema.ReplaceNote)
		}
	}
	sum := sha256.Sum256(resource.Canonical(map[string]any{"op": s.Op, "type": s.Type, "provider": s.Provider,
		"old": oldID, "changes": changes, "reason": s.Reason}))
	ps.Digest = hex.EncodeToString(sum[:])
	return ps
}

// sensitive is how a record shows a write-only value: absent and unknown values as they are, any other
// as resource.Sensitive.
func sensitive(v any) any {
	if _, unknown := v.(resource.Unknown); v == nil || unknown {
		return v
	}
	return resource.Sensitive
}

// readVersions returns the state versions of the stacks whose outputs stack's plan read (its
// dependencies that p.State holds), or nil when it reads none.
func readVersions(p *planner.Plan, stack string) map[string]int64 {
	if p.Assembly == nil {
		return nil
	}
	st := p.Assembly.Stack(stack)
	if st == nil {
		return nil
	}
	var out map[string]int64
	for _, dep := range st.Dependencies {
		if s := p.State[dep]; s != nil {
			if out == nil {
				out = map[string]int64{}
			}
			out[dep] = s.Version
		}
	}
	return out
}
