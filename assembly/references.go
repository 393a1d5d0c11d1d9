package assembly

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// link checks every reference of the loaded stacks (dependsOn, {ref}, {stackRef}) and completes each
// stack's Dependencies with the stacks its stackRef tokens name. Stacks whose template is missing are
// skipped: that is reported already.
func link(a *Assembly) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, s := range a.Stacks {
		if s.Missing {
			s.Dependencies = sortedUnique(s.Dependencies)
			continue
		}
		for _, r := range s.Resources {
			for i, dep := range r.DependsOn {
				if s.Resource(dep) == nil {
					ds = append(ds, unknownResource(a, s, fmt.Sprintf("%s.dependsOn[%d]", r.Path, i), dep))
				}
			}
		}
		ds = append(ds, eachStackToken(s, func(t Token, at *jsonPath) diag.Diagnostics {
			if isStackRef(t) && t.StackRef != s.ID && a.Stack(t.StackRef) != nil {
				s.Dependencies = append(s.Dependencies, t.StackRef) // sortedUnique drops a repeat
			}
			return checkToken(a, s, t, at)
		})...)
		s.Dependencies = sortedUnique(s.Dependencies)
	}
	return ds
}

// eachStackToken calls check with every token of a stack's template: those of the resources (in logical
// ID order) and then those of the outputs (in key order), each with its JSON path in the template,
// rendered only if check needs it, and returns what check found. check may be called twice for a token and
// must then return the same.
//
// For a resource whose tokens Load's decoder recorded (Stack.recordedAt) and none of whose strings can be
// an asset path (which rewriteAssets may have changed), check is first called with those (and an empty
// path), which costs no walk; only if it finds a problem is the resource walked, for the diagnostics in
// their order and with their paths.
func eachStackToken(s *Stack, check func(t Token, at *jsonPath) diag.Diagnostics) diag.Diagnostics {
	var ds diag.Diagnostics
	fn := func(t Token, at *jsonPath) { ds = append(ds, check(t, at)...) }
	at, none := &jsonPath{}, &jsonPath{}
	for i, r := range s.Resources {
		if rec, ok := s.recordedAt(i); ok && !rec.assetHint && recordedPass(rec.tokens, none, check) {
			continue
		}
		at.reset(r.Path + ".properties")
		walkTokens(r.Properties, at, fn)
	}
	for _, key := range slices.Sorted(maps.Keys(s.Outputs)) {
		o := s.Outputs[key]
		at.reset(o.Path + ".value")
		walkTokens(o.Value, at, fn)
	}
	return ds
}

// recordedPass reports whether check finds nothing in any of the recorded tokens.
func recordedPass(tokens []Token, none *jsonPath, check func(t Token, at *jsonPath) diag.Diagnostics) bool {
	for _, t := range tokens {
		if len(check(t, none)) > 0 {
			return false
		}
	}
	return true
}

// isStackRef reports whether t came from a {stackRef, outputKey} object. AsToken leaves both Ref and
// StackRef empty for {"stackRef": "", "outputKey": …}; OutputKey tells it apart.
func isStackRef(t Token) bool {
	return t.StackRef != "" || t.OutputKey != ""
}

// checkToken checks one token of stack s, found at at.
func checkToken(a *Assembly, s *Stack, t Token, at *jsonPath) diag.Diagnostics {
	if isStackRef(t) {
		return checkStackRef(a, s, t, at)
	}
	var ds diag.Diagnostics
	if t.Attr == "" {
		ds.Errorf(s.File, at.String(), "a {ref} without attr is resolved only at synth time; use {ref: ID, attr: NAME}")
		ds[0].Detail = fmt.Sprintf("name the output attribute of %q to use", t.Ref)
	}
	if s.Resource(t.Ref) == nil {
		ds = append(ds, unknownResource(a, s, at.String(), t.Ref))
	}
	return ds
}

// unknownResource reports a reference at path (dependsOn entry or {ref}) to a logical ID that stack s does
// not have: it names the stack that has it, or suggests the nearest logical ID of s.
func unknownResource(a *Assembly, s *Stack, path, id string) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, File: s.File, Path: path}
	for _, other := range a.Stacks {
		if other != s && other.Resource(id) != nil {
			d.Summary = fmt.Sprintf("unknown resource %q in stack %s", id, s.ID)
			d.Detail = fmt.Sprintf("%q is a resource of stack %s; use {stackRef, outputKey} through an output of %s",
				id, other.ID, other.ID)
			return d
		}
	}
	d.Summary = fmt.Sprintf("unknown resource %q in stack %s%s", id, s.ID, suggestion(id, logicalIDs(s)))
	return d
}

// checkStackRef checks a {stackRef, outputKey} token of stack s, found at at.
func checkStackRef(a *Assembly, s *Stack, t Token, at *jsonPath) diag.Diagnostics {
	var ds diag.Diagnostics
	target := a.Stack(t.StackRef)
	switch {
	case t.StackRef == s.ID:
		ds.Errorf(s.File, at.String(), "stackRef to its own stack %s", s.ID)
		ds[0].Detail = "use {ref: ID, attr: NAME} for a resource of the same stack"
	case target == nil:
		ds.Errorf(s.File, at.String(), "unknown stack %q%s", t.StackRef, suggestion(t.StackRef, stackIDs(a)))
		ds[0].Detail = "stacks of this assembly: " + listOrNone(stackIDs(a))
	default:
		keys, known := outputKeys(target)
		if known && !slices.Contains(keys, t.OutputKey) {
			ds.Errorf(s.File, at.String(), "stack %s has no output %q%s", target.ID, t.OutputKey, suggestion(t.OutputKey, keys))
			ds[0].Detail = fmt.Sprintf("outputs of %s: %s", target.ID, listOrNone(keys))
		}
	}
	return ds
}

// outputKeys returns the output keys of s, sorted: its template's, or the manifest's when the template is
// missing. known is false when neither is available.
func outputKeys(s *Stack) (keys []string, known bool) {
	if !s.Missing {
		return slices.Sorted(maps.Keys(s.Outputs)), true
	}
	return sortedUnique(slices.Clone(s.OutputKeys)), len(s.OutputKeys) > 0
}

// logicalIDs returns the logical IDs of s in order.
func logicalIDs(s *Stack) []string {
	ids := make([]string, len(s.Resources))
	for i, r := range s.Resources {
		ids[i] = r.LogicalID
	}
	return ids
}

// stackIDs returns the IDs of a's stacks in manifest order.
func stackIDs(a *Assembly) []string {
	ids := make([]string, len(a.Stacks))
	for i, s := range a.Stacks {
		ids[i] = s.ID
	}
	return ids
}

// listOrNone renders names as "A, B" or "none".
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// sortedUnique sorts list and drops repeated entries.
func sortedUnique(list []string) []string {
	slices.Sort(list)
	return slices.Compact(list)
}
