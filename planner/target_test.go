package planner_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

func less(a, b string) bool { return a < b }

func stackRef(stack, key string) map[string]any {
	return map[string]any{"stackRef": stack, "outputKey": key}
}

// targetAssembly is a small DAG over two stacks:
//
//	Zones: Zone; Ns → Zone; Dup. Output ZoneId reads Zone.
//	App (depends on Zones): Www → Zones.ZoneId; Web → Www; Api → Zones.ZoneId; Dup.
func targetAssembly() *assembly.Assembly {
	return &assembly.Assembly{Dir: "cdkx.out", Stacks: []*assembly.Stack{
		{ID: "Zones", File: "cdkx.out/Zones.json",
			Outputs: map[string]*assembly.Output{"ZoneId": {Key: "ZoneId", Value: ref("Zone", "id"), Path: "outputs.ZoneId"}},
			Resources: []*assembly.Resource{
				res("Zone", resource.Properties{"name": "z"}),
				res("Ns", resource.Properties{"value": ref("Zone", "id")}),
				res("Dup", resource.Properties{"value": "d"}),
			}},
		{ID: "App", File: "cdkx.out/App.json", Dependencies: []string{"Zones"},
			Outputs: map[string]*assembly.Output{"WwwID": {Key: "WwwID", Value: ref("Www", "id"), Path: "outputs.WwwID"}},
			Resources: []*assembly.Resource{
				res("Www", resource.Properties{"value": stackRef("Zones", "ZoneId")}),
				res("Web", resource.Properties{"value": ref("Www", "id")}),
				res("Api", resource.Properties{"value": stackRef("Zones", "ZoneId")}),
				res("Dup", resource.Properties{"value": "d"}),
			}},
	}}
}

// targetState records App's Gone1 and Gone2 (Gone2 depends on Gone1), no longer in the assembly.
func targetState() map[string]*state.Stack {
	app := state.NewStack("App")
	app.Version = 2
	app.Outputs = resource.Properties{"WwwID": "p-Www-old"}
	for _, r := range []*state.Resource{
		{LogicalID: "Gone1", PhysicalID: "p-Gone1"},
		{LogicalID: "Gone2", PhysicalID: "p-Gone2", Dependencies: []string{"Gone1"}},
	} {
		r.Type, r.Provider, r.Outputs = thing.Type, "fake", resource.Properties{"id": r.PhysicalID}
		app.Resources[r.LogicalID] = r
	}
	return map[string]*state.Stack{"App": app}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	allZones := []string{"Zones/Dup", "Zones/Ns", "Zones/Zone"}
	tests := []struct {
		name              string
		stacks            []string
		targets, excludes []string
		want              []string
		partial           []string
		covered           []string
	}{
		{name: "target pulls in its dependencies and the whole stack it reads outputs from",
			targets: []string{"App/Web"}, want: append([]string{"App/Web", "App/Www"}, allZones...),
			partial: []string{"App"}, covered: []string{"App", "Zones"}},
		{name: "a bare logical ID unique across the stacks", targets: []string{"Web"},
			want: append([]string{"App/Web", "App/Www"}, allZones...), partial: []string{"App"}, covered: []string{"App", "Zones"}},
		{name: "target within one stack", targets: []string{"Zones/Ns"}, want: []string{"Zones/Ns", "Zones/Zone"},
			partial: []string{"Zones"}, covered: []string{"Zones"}},
		{name: "repeated targets", targets: []string{"Zones/Ns", "App/Dup"}, want: []string{"App/Dup", "Zones/Ns", "Zones/Zone"},
			partial: []string{"App", "Zones"}, covered: []string{"App", "Zones"}},
		{name: "exclude removes its dependents, across stacks through outputs", excludes: []string{"Zones/Zone"},
			want: []string{"App/Dup", "App/Gone1", "App/Gone2", "Zones/Dup"}, partial: []string{"App", "Zones"},
			covered: []string{"App", "Zones"}},
		{name: "exclude a leaf", excludes: []string{"Web"},
			want:    append([]string{"App/Api", "App/Dup", "App/Gone1", "App/Gone2", "App/Www"}, allZones...),
			partial: []string{"App"}, covered: []string{"App", "Zones"}},
		{name: "exclude wins over target", targets: []string{"App/Web"}, excludes: []string{"App/Www"},
			want: allZones, covered: []string{"Zones"}},
		{name: "target a resource only in state: it and what was recorded as depending on it", targets: []string{"Gone1"},
			want: []string{"App/Gone1", "App/Gone2"}, partial: []string{"App"}, covered: []string{"App"}},
		{name: "exclude a resource only in state keeps what it depends on", excludes: []string{"App/Gone2"},
			want:    append([]string{"App/Api", "App/Dup", "App/Web", "App/Www"}, allZones...),
			covered: []string{"App", "Zones"}},
		{name: "a referenced stack outside the run is not pulled in", stacks: []string{"App"}, targets: []string{"Web"},
			want: []string{"App/Web", "App/Www"}, partial: []string{"App"}, covered: []string{"App"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stacks := tt.stacks
			if stacks == nil {
				stacks = []string{"Zones", "App"}
			}
			sel, err := planner.Select(targetAssembly(), stacks, targetState(), tt.targets, tt.excludes)
			if err != nil {
				t.Fatalf("Select(%q, %q): %v", tt.targets, tt.excludes, err)
			}
			if diff := cmp.Diff(tt.want, sel.Keys(), cmpopts.SortSlices(less)); diff != "" {
				t.Errorf("Select(%q, %q) selected (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			var partial, covered []string
			for _, s := range stacks {
				if sel.IsPartial(s) {
					partial = append(partial, s)
				}
				if sel.Covers(s) {
					covered = append(covered, s)
				}
			}
			if diff := cmp.Diff(tt.partial, partial, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Select(%q, %q) partial stacks (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			if diff := cmp.Diff(tt.covered, covered, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Select(%q, %q) covered stacks (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			wantTotal := 9
			if tt.stacks != nil {
				wantTotal = 6
			}
			if sel.Total != wantTotal {
				t.Errorf("Select(%q, %q).Total = %d, want %d", tt.targets, tt.excludes, sel.Total, wantTotal)
			}
		})
	}
}

func TestSelectBadIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		targets, excludes []string
		want              planner.TargetError
		msg               string
	}{
		{name: "ambiguous", targets: []string{"Dup"},
			want: planner.TargetError{Flag: "--target", ID: "Dup", Matches: []string{"App/Dup", "Zones/Dup"}},
			msg:  "--target Dup is ambiguous: it names App/Dup, Zones/Dup; pass one of them as Stack/LogicalID"},
		{name: "unknown bare ID", targets: []string{"Wwww"},
			want: planner.TargetError{Flag: "--target", ID: "Wwww", Nearest: "App/Www"},
			msg:  `--target Wwww matches no resource in the assembly or the state of the selected stacks (did you mean "App/Www"?)`},
		{name: "unknown Stack/LogicalID", excludes: []string{"App/Webb"},
			want: planner.TargetError{Flag: "--exclude", ID: "App/Webb", Nearest: "App/Web"},
			msg:  `--exclude App/Webb matches no resource in the assembly or the state of the selected stacks (did you mean "App/Web"?)`},
		{name: "nothing close", targets: []string{"Database"},
			want: planner.TargetError{Flag: "--target", ID: "Database"},
			msg:  "--target Database matches no resource in the assembly or the state of the selected stacks"},
		{name: "a stack name", targets: []string{"Zones"},
			want: planner.TargetError{Flag: "--target", ID: "Zones", IsStack: true},
			msg:  "--target Zones matches no resource in the assembly or the state of the selected stacks; Zones is a stack: name it as an argument to select the whole stack, or pass Stack/LogicalID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := planner.Select(targetAssembly(), []string{"Zones", "App"}, targetState(), tt.targets, tt.excludes)
			var te *planner.TargetError
			if !errors.As(err, &te) {
				t.Fatalf("Select(%q, %q) error = %v, want a *TargetError", tt.targets, tt.excludes, err)
			}
			if diff := cmp.Diff(tt.want, *te, cmpopts.IgnoreFields(planner.TargetError{}, "Where")); diff != "" {
				t.Errorf("Select(%q, %q) error (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			if got := err.Error(); got != tt.msg {
				t.Errorf("Select(%q, %q) error = %q, want %q", tt.targets, tt.excludes, got, tt.msg)
			}
		})
	}
}

// destroyState records Zones (Zone; Ns → Zone; Dup) and App (depends on Zones: Www; Web → Www; Api; Dup).
func destroyState() []*state.Stack {
	put := func(st *state.Stack, id string, deps ...string) {
		st.Resources[id] = &state.Resource{LogicalID: id, Type: thing.Type, Provider: "fake", PhysicalID: "p-" + id, Dependencies: deps}
	}
	zones, app := state.NewStack("Zones"), state.NewStack("App")
	put(zones, "Zone")
	put(zones, "Ns", "Zone")
	put(zones, "Dup")
	app.Dependencies = []string{"Zones"}
	put(app, "Www")
	put(app, "Web", "Www")
	put(app, "Api")
	put(app, "Dup")
	return []*state.Stack{zones, app}
}

func TestSelectDestroy(t *testing.T) {
	t.Parallel()
	allApp := []string{"App/Api", "App/Dup", "App/Web", "App/Www"}
	tests := []struct {
		name              string
		targets, excludes []string
		want              []string
		partial           []string
	}{
		{name: "no flags: everything", excludes: nil,
			want: append([]string{"Zones/Dup", "Zones/Ns", "Zones/Zone"}, allApp...)},
		{name: "target takes its dependents, across stacks all of the dependent stacks", targets: []string{"Zones/Zone"},
			want: append([]string{"Zones/Ns", "Zones/Zone"}, allApp...), partial: []string{"Zones"}},
		{name: "target a resource in the dependent stack", targets: []string{"Www"},
			want: []string{"App/Web", "App/Www"}, partial: []string{"App"}},
		{name: "exclude keeps its dependencies, across stacks all of the stacks it depends on", excludes: []string{"App/Web"},
			want: []string{"App/Api", "App/Dup"}, partial: []string{"App"}},
		{name: "exclude wins over target", targets: []string{"Zone"}, excludes: []string{"App/Web"},
			want: []string{"App/Api", "App/Dup"}, partial: []string{"App"}},
		{name: "exclude a leaf of the dependency stack", excludes: []string{"Zones/Ns"},
			want: append([]string{"Zones/Dup"}, allApp...), partial: []string{"Zones"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stacks := destroyState()
			sel, err := planner.SelectDestroy(stacks, tt.targets, tt.excludes)
			if err != nil {
				t.Fatalf("SelectDestroy(%q, %q): %v", tt.targets, tt.excludes, err)
			}
			if diff := cmp.Diff(tt.want, sel.Keys(), cmpopts.SortSlices(less)); diff != "" {
				t.Errorf("SelectDestroy(%q, %q) (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			var partial []string
			for _, s := range []string{"Zones", "App"} {
				if sel.IsPartial(s) {
					partial = append(partial, s)
				}
			}
			if diff := cmp.Diff(tt.partial, partial, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("SelectDestroy(%q, %q) partial stacks (-want +got):\n%s", tt.targets, tt.excludes, diff)
			}
			// FilterStacks hands the engine exactly the selected resources, in the stacks covered.
			var filtered []string
			for _, st := range sel.FilterStacks(stacks) {
				for id := range st.Resources {
					filtered = append(filtered, st.Name+"/"+id)
				}
			}
			if diff := cmp.Diff(tt.want, filtered, cmpopts.SortSlices(less)); diff != "" {
				t.Errorf("FilterStacks() (-want +got):\n%s", diff)
			}
			if got := len(stacks[1].Resources); got != 4 {
				t.Errorf("FilterStacks changed its input: App has %d resources, want 4", got)
			}
		})
	}
	if _, err := planner.SelectDestroy(destroyState(), []string{"Dup"}, nil); err == nil ||
		err.Error() != "--target Dup is ambiguous: it names App/Dup, Zones/Dup; pass one of them as Stack/LogicalID" {
		t.Errorf("SelectDestroy(Dup) error = %v, want an ambiguity naming App/Dup and Zones/Dup", err)
	}
}

func planKeys(p *planner.Plan) (steps, deletes []string) {
	for _, s := range p.Steps {
		steps = append(steps, s.Key()+":"+string(s.Op))
	}
	for _, s := range p.Deletes {
		deletes = append(deletes, s.Key())
	}
	return steps, deletes
}

func TestMakeTargeted(t *testing.T) {
	t.Parallel()
	a := targetAssembly()
	in := planner.Input{Assembly: a, Stacks: []string{"Zones", "App"}, State: targetState(), Schemas: lookup,
		Targets: []string{"App/Web"}}
	p, ds := planner.Make(in)
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	steps, deletes := planKeys(p)
	wantSteps := []string{"Zones/Zone:create", "Zones/Ns:create", "Zones/Dup:create", "App/Www:create", "App/Web:create"}
	if diff := cmp.Diff(wantSteps, steps, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if len(deletes) != 0 {
		t.Errorf("deletes = %q, want none: Gone1 and Gone2 are not targeted", deletes)
	}
	if diff := cmp.Diff([]string{"Zones", "App"}, p.Stacks); diff != "" {
		t.Errorf("stacks (-want +got):\n%s", diff)
	}
	// App is covered partly: its recorded outputs are kept, not predicted.
	if diff := cmp.Diff(resource.Properties{"WwwID": "p-Www-old"}, p.Outputs["App"]); diff != "" {
		t.Errorf("App outputs (-want +got):\n%s", diff)
	}
	if c, u, r, d := p.Counts(); c != 5 || u+r+d != 0 {
		t.Errorf("Counts() = %d, %d, %d, %d; want 5, 0, 0, 0", c, u, r, d)
	}
	// The graph holds only what runs, in dependency order: Zones' stack node before App's resources.
	pos := map[string]int{}
	for i, id := range p.Graph.Order() {
		pos[p.Graph.Nodes[id].Key()] = i
	}
	if len(pos) != 7 {
		t.Errorf("graph has %d nodes, want 7 (5 resources, 2 stacks): %v", len(pos), pos)
	}
	for _, before := range [][2]string{{"Zones/Zone", "Zones"}, {"Zones", "App/Www"}, {"App/Www", "App/Web"}, {"App/Web", "App"}} {
		if pos[before[0]] >= pos[before[1]] {
			t.Errorf("%s runs after %s, want before", before[0], before[1])
		}
	}
	if p.Selection.Len() != 5 || p.Selection.Total != 9 {
		t.Errorf("selection: %d of %d, want 5 of 9", p.Selection.Len(), p.Selection.Total)
	}

	// A targeted resource only in state is a delete, with what was recorded as depending on it first.
	in.Targets = []string{"Gone1"}
	p, ds = planner.Make(in)
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	steps, deletes = planKeys(p)
	if len(steps) != 0 {
		t.Errorf("steps = %q, want none", steps)
	}
	if diff := cmp.Diff([]string{"App/Gone2", "App/Gone1"}, deletes); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"App"}, p.Stacks); diff != "" {
		t.Errorf("stacks (-want +got):\n%s", diff)
	}

	// Without flags nothing is narrowed.
	in.Targets = nil
	p, _ = planner.Make(in)
	if p.Selection != nil || len(p.Steps) != 7 || len(p.Deletes) != 2 {
		t.Errorf("untargeted plan: selection %v, %d steps, %d deletes; want nil, 7, 2", p.Selection, len(p.Steps), len(p.Deletes))
	}
}

func TestMakeTargetedErrors(t *testing.T) {
	t.Parallel()
	zones := state.NewStack("Zones")
	zones.Outputs = resource.Properties{"ZoneId": "z-1"}
	tests := []struct {
		name    string
		in      planner.Input
		wantErr string
	}{
		{name: "unknown ID", in: planner.Input{Stacks: []string{"Zones", "App"}, Targets: []string{"App/Webb"}},
			wantErr: `error: --target App/Webb matches no resource in the assembly or the state of the selected stacks (did you mean "App/Web"?); pass Stack/LogicalID as ` + "`cdkx list`" + ` shows it`},
		{name: "reads a stack output nobody recorded", in: planner.Input{Stacks: []string{"App"}, Targets: []string{"Www"}},
			wantErr: "error: cdkx.out/App.json: resources.Www.properties.value: App/Www reads output ZoneId of stack Zones, which this run does not deploy and which has no recorded value; deploy stack Zones first, or include it in this run"},
		{name: "reads a recorded stack output",
			in: planner.Input{Stacks: []string{"App"}, Targets: []string{"Www"}, State: map[string]*state.Stack{"Zones": zones}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.Assembly, in.Schemas = targetAssembly(), lookup
			p, ds := planner.Make(in)
			if tt.wantErr == "" {
				if ds.HasErrors() || p == nil {
					t.Fatalf("Make() = %v", ds.Err())
				}
				return
			}
			if p != nil || !ds.HasErrors() {
				t.Fatalf("Make() succeeded, want error %q", tt.wantErr)
			}
			if got := ds.Err().Error(); got != tt.wantErr {
				t.Errorf("Make() error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
