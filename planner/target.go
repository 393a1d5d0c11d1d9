package planner

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Selection is the set of resources that --target and --exclude narrow a run to: Terraform's -target plus
// CDK-style exclusion. Resources it leaves out are left exactly as they are: no provider call, no state
// change. A nil *Selection selects every resource; its methods accept a nil receiver.
//
// A deploy selection (Select) is closed under dependencies: a selected resource's dependencies are
// selected too, so a selected step never reads an output of a resource the run leaves alone, except
// through the recorded outputs of a stack outside the run.
type Selection struct {
	// Resources holds the "Stack/LogicalID" keys of the selected resources.
	Resources map[string]bool
	// Total is how many resources the run would consider without --target and --exclude: the M of
	// "N of M".
	Total int
	// Partial holds the stacks the run still covers but leaves at least one resource of out of. A deploy
	// keeps such a stack's recorded outputs instead of recomputing them; a destroy leaves the stack in
	// place with its outputs.
	Partial map[string]bool
	// covered holds the stacks the run still covers: a deploy or destroy touches no other stack.
	covered map[string]bool
}

// Contains reports whether the resource stack/logicalID is selected (always, for a nil Selection).
func (s *Selection) Contains(stack, logicalID string) bool {
	return s == nil || s.Resources[stack+"/"+logicalID]
}

// Covers reports whether the run still covers stack: it has a selected resource, or (deploy) a selected
// resource reads its outputs. Always true for a nil Selection.
func (s *Selection) Covers(stack string) bool {
	return s == nil || s.covered[stack]
}

// IsPartial reports whether the run covers stack but leaves some of its resources out (never, for a nil
// Selection).
func (s *Selection) IsPartial(stack string) bool {
	return s != nil && s.Partial[stack]
}

// Len returns how many resources are selected: the N of "N of M".
func (s *Selection) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Resources)
}

// Keys returns the selected "Stack/LogicalID" keys, sorted.
func (s *Selection) Keys() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.Resources))
}

// FilterStacks returns, in order, a copy of each stack the selection covers holding only its selected
// resources; the records themselves are shared. With a nil Selection it returns stacks unchanged. A destroy
// hands the result to the engine, which then deletes exactly the selected resources.
func (s *Selection) FilterStacks(stacks []*state.Stack) []*state.Stack {
	if s == nil {
		return stacks
	}
	var out []*state.Stack
	for _, st := range stacks {
		if !s.covered[st.Name] {
			continue
		}
		c := *st
		c.Resources = map[string]*state.Resource{}
		for id, r := range st.Resources {
			if s.Contains(st.Name, id) {
				c.Resources[id] = r
			}
		}
		out = append(out, &c)
	}
	return out
}

// TargetError is a --target or --exclude ID that names no resource, or more than one.
type TargetError struct {
	// Flag is "--target" or "--exclude".
	Flag string
	// ID is the ID as given.
	ID string
	// Matches are the "Stack/LogicalID" keys a bare logical ID matches, when it matches more than one.
	Matches []string
	// Nearest is the closest key when ID matches nothing, or "".
	Nearest string
	// IsStack is set when ID matches nothing but is the name of a stack.
	IsStack bool
	// Where says what was searched, e.g. "in the assembly or state of the selected stacks".
	Where string
}

// Error names the ID, the candidates or the nearest match, and what to do next.
func (e *TargetError) Error() string {
	if len(e.Matches) > 1 {
		return fmt.Sprintf("%s %s is ambiguous: it names %s; pass one of them as Stack/LogicalID",
			e.Flag, e.ID, strings.Join(e.Matches, ", "))
	}
	msg := fmt.Sprintf("%s %s matches no resource %s", e.Flag, e.ID, e.Where)
	switch {
	case e.IsStack:
		msg += fmt.Sprintf("; %s is a stack: name it as an argument to select the whole stack, or pass Stack/LogicalID", e.ID)
	case e.Nearest != "":
		msg += fmt.Sprintf(" (did you mean %q?)", e.Nearest)
	}
	return msg
}

// Select resolves --target and --exclude IDs against the resources a deploy of stacks would consider —
// those of the assembly, and those recorded in state but gone from the assembly (a deploy deletes them) —
// and returns what the deploy is narrowed to. An ID is "Stack/LogicalID", or a bare logical ID when exactly
// one of the stacks has it; an ambiguous or unknown ID is a *TargetError.
//
// A resource of the assembly depends on its dependsOn entries and {ref} targets, and, through a
// {stackRef}, on every resource of the referenced stack (and on whatever that stack's outputs read from
// other stacks). Reading a stack's outputs pulls in the whole stack because the outputs of a stack that a
// run covers only partly are not recomputed: reading them would see stale values.
//
// --target X selects X and everything X depends on, transitively; without --target everything is
// targeted. --exclude Y removes Y and everything that depends on Y, transitively; exclusion wins. A
// resource only in state is deleted only when selected: targeting it selects it and the resources only in
// state that were recorded as depending on it (they must go first); excluding it also keeps the resources
// only in state that it was recorded as depending on.
//
// Select builds the dependency graph of stacks (BuildGraph; a cycle is an error) and walks the Ancestors
// and Descendants of its References; for the resources only in state, those of their TeardownGraph. It
// takes time linear in the size of those graphs.
func Select(a *assembly.Assembly, stacks []string, st map[string]*state.Stack, targets, excludes []string) (*Selection, error) {
	g, ds := BuildGraph(a, stacks)
	if ds.HasErrors() {
		return nil, ds.Err()
	}
	sel, _, err := selectDeploy(stackIndex(a), g, stacks, st, targets, excludes)
	return sel, err
}

// selectDeploy is Select on g, the graph BuildGraph returned for exactly stacks. It also returns which
// nodes of g the selection keeps: its selected resources and the stack nodes of the stacks it covers.
func selectDeploy(asm map[string]*assembly.Stack, g *Graph, stacks []string, st map[string]*state.Stack,
	targets, excludes []string) (*Selection, []bool, error) {
	byStack := map[string][]int{} // the resource nodes of each stack, ascending
	stackNode := map[string]int{}
	for id, n := range g.Nodes {
		if n.Kind == StackNode {
			stackNode[n.Stack] = id
		} else {
			byStack[n.Stack] = append(byStack[n.Stack], id)
		}
	}
	// The resources only in state go into one teardown graph: their recorded dependencies are its edges.
	var gone []*Step
	for _, id := range stacks {
		if rec := st[id]; rec != nil {
			as := asm[id]
			for _, r := range rec.SortedResources() {
				if as.Resource(r.LogicalID) == nil {
					gone = append(gone, &Step{Decision: Decision{Op: OpDelete}, Stack: id, LogicalID: r.LogicalID,
						Type: r.Type, Provider: r.Provider, Old: r, Dependencies: r.Dependencies})
				}
			}
		}
	}
	tg, err := TeardownGraph(gone, nil)
	if err != nil {
		return nil, nil, err
	}
	// One key per resource, stack by stack: those of the assembly, then those only in state. nodes[i] is
	// key i's node: an ID of g, or len(g.Nodes) plus an ID of tg.
	var keys []string
	var nodes []int
	next := 0 // the next node of tg
	for _, id := range stacks {
		for _, n := range byStack[id] {
			keys = append(keys, g.Nodes[n].Key())
			nodes = append(nodes, n)
		}
		for ; next < len(tg.Nodes) && tg.Nodes[next].Stack == id; next++ {
			keys = append(keys, tg.Nodes[next].Key())
			nodes = append(nodes, len(g.Nodes)+next)
		}
	}
	where := "in the assembly or the state of the selected stacks"
	tIdx, err := resolveIDs("--target", targets, keys, stacks, where)
	if err != nil {
		return nil, nil, err
	}
	eIdx, err := resolveIDs("--exclude", excludes, keys, stacks, where)
	if err != nil {
		return nil, nil, err
	}
	split := func(idx []int) (inAsm, onlyInState []int) {
		for _, i := range idx {
			if n := nodes[i]; n < len(g.Nodes) {
				inAsm = append(inAsm, n)
			} else {
				onlyInState = append(onlyInState, n-len(g.Nodes))
			}
		}
		return inAsm, onlyInState
	}
	tAsm, tDel := split(tIdx)
	eAsm, eDel := split(eIdx)

	refs := g.References()
	targeted, targetedDel := all(len(g.Nodes)), all(len(tg.Nodes))
	if len(targets) > 0 {
		targeted, targetedDel = mark(len(g.Nodes), refs.Ancestors(tAsm...)), mark(len(tg.Nodes), tg.Ancestors(tDel...))
	}
	excluded, excludedDel := mark(len(g.Nodes), refs.Descendants(eAsm...)), mark(len(tg.Nodes), tg.Descendants(eDel...))

	sel := &Selection{Resources: map[string]bool{}, Total: len(keys), Partial: map[string]bool{}, covered: map[string]bool{}}
	keep := make([]bool, len(g.Nodes))
	for i, k := range keys {
		var stack string
		if n := nodes[i]; n < len(g.Nodes) {
			if keep[n] = targeted[n] && !excluded[n]; !keep[n] {
				continue
			}
			stack = g.Nodes[n].Stack
		} else {
			if n -= len(g.Nodes); !targetedDel[n] || excludedDel[n] {
				continue
			}
			stack = tg.Nodes[n].Stack
		}
		sel.Resources[k] = true
		sel.covered[stack] = true
	}
	for _, id := range stacks {
		n, ok := stackNode[id]
		if ok && targeted[n] && !excluded[n] {
			sel.covered[id] = true
		}
		if !sel.covered[id] {
			continue
		}
		if ok {
			keep[n] = true
		}
		for _, r := range byStack[id] {
			if !keep[r] {
				sel.Partial[id] = true
				break
			}
		}
	}
	return sel, keep, nil
}

// SelectDestroy resolves --target and --exclude IDs against the resources recorded in stacks and returns
// what a destroy is narrowed to: each target and everything that depends on it (a resource cannot go while
// its dependents live), minus each excluded resource and everything it depends on (it keeps working);
// exclusion wins. Without --target everything is targeted. Dependencies are state's recorded direct
// dependencies within a stack; across stacks state records only which stacks a stack depends on, so a
// resource counts as depending on every resource of those stacks (as the teardown order does).
//
// It walks the teardown graph of stacks (TeardownGraph of DestroySteps): a target's Ancestors there are
// what must be deleted before it, an exclusion's Descendants what can only be deleted after it. Recorded
// dependencies that form a cycle are an error. It takes time linear in the size of that graph.
func SelectDestroy(stacks []*state.Stack, targets, excludes []string) (*Selection, error) {
	stackDeps := make(map[string][]string, len(stacks))
	names := make([]string, 0, len(stacks))
	for _, st := range stacks {
		names = append(names, st.Name)
		stackDeps[st.Name] = st.Dependencies
	}
	tg, err := TeardownGraph(DestroySteps(stacks), stackDeps)
	if err != nil {
		return nil, err
	}
	// One key per resource, at the node of its live object (the objects a resource's replacements left go
	// with it: they depend on the same resources).
	var keys []string
	var nodes []int
	for id, n := range tg.Nodes {
		if n.Step.Object == nil {
			keys = append(keys, n.Key())
			nodes = append(nodes, id)
		}
	}
	where := "recorded in the state of the selected stacks"
	tIdx, err := resolveIDs("--target", targets, keys, names, where)
	if err != nil {
		return nil, err
	}
	eIdx, err := resolveIDs("--exclude", excludes, keys, names, where)
	if err != nil {
		return nil, err
	}
	pick := func(idx []int) []int {
		out := make([]int, len(idx))
		for i, k := range idx {
			out[i] = nodes[k]
		}
		return out
	}
	targeted := all(len(tg.Nodes))
	if len(targets) > 0 {
		targeted = mark(len(tg.Nodes), tg.Ancestors(pick(tIdx)...))
	}
	kept := mark(len(tg.Nodes), tg.Descendants(pick(eIdx)...))
	sel := &Selection{Resources: map[string]bool{}, Total: len(keys), Partial: map[string]bool{}, covered: map[string]bool{}}
	for i, k := range keys {
		if n := nodes[i]; targeted[n] && !kept[n] {
			sel.Resources[k] = true
			sel.covered[tg.Nodes[n].Stack] = true
		}
	}
	for i, k := range keys {
		if s := tg.Nodes[nodes[i]].Stack; sel.covered[s] && !sel.Resources[k] {
			sel.Partial[s] = true
		}
	}
	return sel, nil
}

// all returns n marks, all set.
func all(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// mark returns n marks, set at ids.
func mark(n int, ids []int) []bool {
	out := make([]bool, n)
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// resolveIDs maps each ID to the index of its key: "Stack/LogicalID" as it is, a bare logical ID when one
// key has it.
func resolveIDs(flag string, ids, keys, stacks []string, where string) ([]int, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	index := make(map[string]int, len(keys))
	for i, k := range keys {
		if _, dup := index[k]; !dup {
			index[k] = i
		}
	}
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if strings.Contains(id, "/") {
			i, ok := index[id]
			if !ok {
				return nil, &TargetError{Flag: flag, ID: id, Where: where, Nearest: nearest(id, keys)}
			}
			out = append(out, i)
			continue
		}
		var matches []string
		at := -1
		for i, k := range keys {
			if _, logical, _ := strings.Cut(k, "/"); logical == id {
				matches = append(matches, k)
				at = i
			}
		}
		switch len(matches) {
		case 1:
			out = append(out, at)
		case 0:
			e := &TargetError{Flag: flag, ID: id, Where: where, IsStack: slices.Contains(stacks, id)}
			if !e.IsStack {
				e.Nearest = nearestLogical(id, keys)
			}
			return nil, e
		default:
			sort.Strings(matches)
			return nil, &TargetError{Flag: flag, ID: id, Where: where, Matches: matches}
		}
	}
	return out, nil
}

// nearestLogical returns the key whose logical ID is closest to id, or "".
func nearestLogical(id string, keys []string) string {
	logical := make([]string, len(keys))
	for i, k := range keys {
		_, logical[i], _ = strings.Cut(k, "/")
	}
	if near := nearest(id, logical); near != "" {
		return keys[slices.Index(logical, near)]
	}
	return ""
}

// nearest returns the candidate closest to name (diag.NearestWithin: letter case first, then edit
// distance), or "" when none is within max(3, len(name)/3) edits and fewer edits than name has characters.
func nearest(name string, candidates []string) string {
	return diag.NearestWithin(name, candidates, max(3, utf8.RuneCountInString(name)/3))
}

// narrow applies in.Targets and in.Excludes to g: it returns the selection and the graph of what the run
// still covers (g.Subgraph). Diagnostics report bad IDs and selected resources that read an output nobody
// recorded.
func narrow(in Input, g *Graph, asm map[string]*assembly.Stack) (*Selection, *Graph, diag.Diagnostics) {
	sel, keep, err := selectDeploy(asm, g, in.Stacks, in.State, in.Targets, in.Excludes)
	if err != nil {
		detail := "pass Stack/LogicalID as `cdkx list` shows it"
		return nil, nil, diag.Diagnostics{{Severity: diag.Error, Summary: err.Error(), Detail: detail}}
	}
	if ds := unrecordedReads(in, asm, sel); ds.HasErrors() {
		return nil, nil, ds
	}
	return sel, g.Subgraph(func(id int) bool { return keep[id] }), nil
}

// unrecordedReads reports each selected resource that reads an output the run will not produce and state
// has no record of: a {ref} to a resource left out and never deployed, or a {stackRef} to a stack the
// run does not recompute whose recorded outputs lack the key.
func unrecordedReads(in Input, asm map[string]*assembly.Stack, sel *Selection) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, id := range in.Stacks {
		as := asm[id]
		rec := in.State[id]
		for _, r := range as.Resources {
			if !sel.Contains(id, r.LogicalID) {
				continue
			}
			for _, t := range assembly.FindTokens("properties", r.Properties) {
				switch {
				case t.Ref != "" && t.Attr != "" && !sel.Contains(id, t.Ref):
					if rec != nil && rec.Resources[t.Ref] != nil && rec.Resources[t.Ref].PhysicalID != "" {
						continue
					}
					ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: r.Path + "." + t.Path,
						Summary: fmt.Sprintf("%s/%s reads %s.%s, but %s/%s is not selected and has never been deployed",
							id, r.LogicalID, t.Ref, t.Attr, id, t.Ref),
						Detail: fmt.Sprintf("add --target %s/%s, or deploy without --target/--exclude", id, t.Ref)})
				case t.StackRef != "" && (!sel.Covers(t.StackRef) || sel.IsPartial(t.StackRef)):
					if other := in.State[t.StackRef]; other != nil {
						if _, ok := other.Outputs[t.OutputKey]; ok {
							continue
						}
					}
					ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: r.Path + "." + t.Path,
						Summary: fmt.Sprintf("%s/%s reads output %s of stack %s, which this run does not deploy and which has no recorded value",
							id, r.LogicalID, t.OutputKey, t.StackRef),
						Detail: fmt.Sprintf("deploy stack %s first, or include it in this run", t.StackRef)})
				}
			}
		}
	}
	return ds
}

// recordedOutputs returns a copy of a stack's recorded outputs (empty when it was never deployed).
func recordedOutputs(st *state.Stack) resource.Properties {
	out := resource.Properties{}
	if st != nil {
		for k, v := range st.Outputs {
			out[k] = resource.Clone(v)
		}
	}
	return out
}
