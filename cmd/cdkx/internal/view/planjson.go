package view

import (
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// PlanJSON is what `cdkx diff --json` prints: the plan's stacks in deployment order, its steps as a
// deployment of the plan records them (operation.PlanRecords, stack by stack), the counts by "create",
// "update", "replace" and "delete", and whether it changes anything.
type PlanJSON struct {
	Stacks  []string         `json:"stacks"`
	Steps   []state.PlanStep `json:"steps"`
	Counts  map[string]int   `json:"counts"`
	Changes bool             `json:"changes"`
}

// PlanJSONOf returns the JSON view of p.
func PlanJSONOf(p *planner.Plan) PlanJSON {
	out := PlanJSON{Stacks: p.Stacks, Steps: []state.PlanStep{}, Changes: p.HasChanges()}
	c, u, r, d := p.Counts()
	out.Counts = map[string]int{"create": c, "update": u, "replace": r, "delete": d}
	recs := operation.PlanRecords(p)
	for _, name := range p.Stacks {
		if rec := recs[name]; rec != nil {
			out.Steps = append(out.Steps, rec.Steps...)
		}
	}
	return out
}
