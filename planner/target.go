package planner

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agext/levenshtein"

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
func Select(a *assembly.Assembly, stacks []string, st map[string]*state.Stack, targets, excludes []string) (*Selection, error) {
	inRun := map[string]bool{}
	for _, id := range stacks {
		inRun[id] = true
	}
	deps := map[string][]string{}    // assembly resources and stack output nodes → what they depend on
	delDeps := map[string][]string{} // resources only in state → the resources only in state they depend on
	stackOf := map[string]string{}   // resource key → stack
	var keys []string
	stackRefs := func(v any) []string {
		var out []string
		for _, t := range assembly.FindTokens("", v) {
			if t.StackRef != "" && inRun[t.StackRef] {
				out = append(out, outputsNode(t.StackRef))
			}
		}
		return out
	}
	for _, id := range stacks {
		as := a.Stack(id)
		out := outputsNode(id)
		deps[out] = nil
		for _, r := range as.Resources {
			k := id + "/" + r.LogicalID
			keys = append(keys, k)
			stackOf[k] = id
			deps[out] = append(deps[out], k)
			var d []string
			for _, dep := range ResourceDependencies(r) {
				if as.Resource(dep) != nil {
					d = append(d, id+"/"+dep)
				}
			}
			deps[k] = append(d, stackRefs(r.Properties)...)
		}
		for _, key := range slices.Sorted(maps.Keys(as.Outputs)) {
			deps[out] = append(deps[out], stackRefs(as.Outputs[key].Value)...)
		}
		if rec := st[id]; rec != nil {
			for _, r := range rec.SortedResources() {
				if as.Resource(r.LogicalID) != nil {
					continue
				}
				k := id + "/" + r.LogicalID
				keys = append(keys, k)
				stackOf[k] = id
				delDeps[k] = nil
				for _, dep := range r.Dependencies {
					if rec.Resources[dep] != nil && as.Resource(dep) == nil {
						delDeps[k] = append(delDeps[k], id+"/"+dep)
					}
				}
			}
		}
	}
	where := "in the assembly or the state of the selected stacks"
	tKeys, err := resolveIDs("--target", targets, keys, stacks, where)
	if err != nil {
		return nil, err
	}
	eKeys, err := resolveIDs("--exclude", excludes, keys, stacks, where)
	if err != nil {
		return nil, err
	}
	onlyInState := func(k string) bool { _, ok := delDeps[k]; return ok }
	tAsm, tDel := split(tKeys, onlyInState)
	eAsm, eDel := split(eKeys, onlyInState)

	var targeted, targetedDel map[string]bool
	if len(targets) == 0 {
		targeted, targetedDel = setOf(slices.Collect(maps.Keys(deps))), setOf(slices.Collect(maps.Keys(delDeps)))
	} else {
		targeted, targetedDel = reach(deps, tAsm), reach(reverse(delDeps), tDel)
	}
	excluded, excludedDel := reach(reverse(deps), eAsm), reach(delDeps, eDel)

	sel := &Selection{Resources: map[string]bool{}, Total: len(keys), Partial: map[string]bool{}, covered: map[string]bool{}}
	for _, k := range keys {
		if onlyInState(k) {
			if targetedDel[k] && !excludedDel[k] {
				sel.Resources[k] = true
			}
		} else if targeted[k] && !excluded[k] {
			sel.Resources[k] = true
		}
		if sel.Resources[k] {
			sel.covered[stackOf[k]] = true
		}
	}
	for _, id := range stacks {
		if out := outputsNode(id); targeted[out] && !excluded[out] {
			sel.covered[id] = true
		}
		if !sel.covered[id] {
			continue
		}
		for _, r := range a.Stack(id).Resources {
			if !sel.Contains(id, r.LogicalID) {
				sel.Partial[id] = true
				break
			}
		}
	}
	return sel, nil
}

// SelectDestroy resolves --target and --exclude IDs against the resources recorded in stacks and returns
// what a destroy is narrowed to: each target and everything that depends on it (a resource cannot go while
// its dependents live), minus each excluded resource and everything it depends on (it keeps working);
// exclusion wins. Without --target everything is targeted. Dependencies are state's recorded direct
// dependencies within a stack; across stacks state records only which stacks a stack depends on, so a
// resource counts as depending on every resource of those stacks (as the teardown order does).
func SelectDestroy(stacks []*state.Stack, targets, excludes []string) (*Selection, error) {
	deps := map[string][]string{}
	stackOf := map[string]string{}
	var keys, names []string
	for _, st := range stacks {
		names = append(names, st.Name)
		all := allNode(st.Name)
		deps[all] = nil
		for _, r := range st.SortedResources() {
			k := st.Name + "/" + r.LogicalID
			keys = append(keys, k)
			stackOf[k] = st.Name
			deps[all] = append(deps[all], k)
			var d []string
			for _, dep := range r.Dependencies {
				if st.Resources[dep] != nil {
					d = append(d, st.Name+"/"+dep)
				}
			}
			for _, sd := range st.Dependencies {
				d = append(d, allNode(sd))
			}
			deps[k] = d
		}
	}
	where := "recorded in the state of the selected stacks"
	tKeys, err := resolveIDs("--target", targets, keys, names, where)
	if err != nil {
		return nil, err
	}
	eKeys, err := resolveIDs("--exclude", excludes, keys, names, where)
	if err != nil {
		return nil, err
	}
	targeted := setOf(keys)
	if len(targets) > 0 {
		targeted = reach(reverse(deps), tKeys)
	}
	kept := reach(deps, eKeys)
	sel := &Selection{Resources: map[string]bool{}, Total: len(keys), Partial: map[string]bool{}, covered: map[string]bool{}}
	for _, k := range keys {
		if targeted[k] && !kept[k] {
			sel.Resources[k] = true
			sel.covered[stackOf[k]] = true
		}
	}
	for _, k := range keys {
		if s := stackOf[k]; sel.covered[s] && !sel.Resources[k] {
			sel.Partial[s] = true
		}
	}
	return sel, nil
}

// outputsNode and allNode name the extra nodes of the selection graphs: a stack's outputs (deploy), all
// of a stack's resources (destroy). Neither stack IDs nor logical IDs contain "#".
func outputsNode(stack string) string { return stack + "#outputs" }
func allNode(stack string) string     { return stack + "#all" }

// resolveIDs maps each ID to a key: "Stack/LogicalID" as it is, a bare logical ID when one key has it.
func resolveIDs(flag string, ids, keys, stacks []string, where string) ([]string, error) {
	known := setOf(keys)
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if strings.Contains(id, "/") {
			if !known[id] {
				return nil, &TargetError{Flag: flag, ID: id, Where: where, Nearest: nearest(id, keys)}
			}
			out = append(out, id)
			continue
		}
		var matches []string
		for _, k := range keys {
			if _, logical, _ := strings.Cut(k, "/"); logical == id {
				matches = append(matches, k)
			}
		}
		switch len(matches) {
		case 1:
			out = append(out, matches[0])
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

// nearest returns the candidate closest to name by edit distance, or "" when none is within
// max(3, len(name)/3) edits and fewer edits than name has characters. Ties go to the earliest candidate.
func nearest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	limit := min(max(3, n/3), n-1)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := levenshtein.Distance(name, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

func split(keys []string, second func(string) bool) (first, other []string) {
	for _, k := range keys {
		if second(k) {
			other = append(other, k)
		} else {
			first = append(first, k)
		}
	}
	return first, other
}

func setOf(keys []string) map[string]bool {
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}

func reverse(deps map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, ds := range deps {
		for _, d := range ds {
			out[d] = append(out[d], k)
		}
	}
	return out
}

// reach returns from and every node reachable from it along edges.
func reach(edges map[string][]string, from []string) map[string]bool {
	seen := map[string]bool{}
	stack := slices.Clone(from)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[k] {
			continue
		}
		seen[k] = true
		stack = append(stack, edges[k]...)
	}
	return seen
}

// narrow applies in.Targets and in.Excludes to g: it returns the selection and the graph of what the run
// still covers. Diagnostics report bad IDs and selected resources that read an output nobody recorded.
func narrow(in Input, g *Graph) (*Selection, *Graph, diag.Diagnostics) {
	sel, err := Select(in.Assembly, in.Stacks, in.State, in.Targets, in.Excludes)
	if err != nil {
		detail := "pass Stack/LogicalID as `cdkx list` shows it"
		return nil, nil, diag.Diagnostics{{Severity: diag.Error, Summary: err.Error(), Detail: detail}}
	}
	if ds := unrecordedReads(in, sel); ds.HasErrors() {
		return nil, nil, ds
	}
	sub, err := subgraph(g, func(n *Node) bool {
		if n.Kind == StackNode {
			return sel.Covers(n.Stack)
		}
		return sel.Contains(n.Stack, n.LogicalID)
	})
	if err != nil {
		return nil, nil, diag.Diagnostics{{Severity: diag.Error, Summary: err.Error(), Detail: "run without --target/--exclude and report it"}}
	}
	return sel, sub, nil
}

// unrecordedReads reports each selected resource that reads an output the run will not produce and state
// has no record of: a {ref} to a resource left out and never deployed, or a {stackRef} to a stack the
// run does not recompute whose recorded outputs lack the key.
func unrecordedReads(in Input, sel *Selection) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, id := range in.Stacks {
		as := in.Assembly.Stack(id)
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

// subgraph returns the graph of the nodes keep accepts. An edge between two kept nodes that ran through
// dropped nodes is kept, so the kept nodes run in the same relative order as in g.
func subgraph(g *Graph, keep func(*Node) bool) (*Graph, error) {
	b := newBuilder()
	newID := map[int]int{}
	for _, id := range g.Order() {
		n := g.Nodes[id]
		if keep(n) {
			newID[id] = b.add(&Node{Kind: n.Kind, Stack: n.Stack, LogicalID: n.LogicalID})
		}
	}
	// keptDeps(id): the nearest kept nodes among id's dependencies, looking through dropped ones.
	memo := map[int][]int{}
	var keptDeps func(int) []int
	keptDeps = func(id int) []int {
		if out, ok := memo[id]; ok {
			return out
		}
		var out []int
		for _, d := range g.Dependencies(id) {
			if _, kept := newID[d]; kept {
				out = append(out, d)
			} else {
				out = append(out, keptDeps(d)...)
			}
		}
		memo[id] = out
		return out
	}
	for old, id := range newID {
		for _, d := range keptDeps(old) {
			b.edge(newID[d], id)
		}
	}
	sub, err := b.build() // a subgraph of an acyclic graph is acyclic: an error here is a bug
	if err != nil {
		return nil, fmt.Errorf("narrow the dependency graph: %w", err)
	}
	return sub, nil
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
