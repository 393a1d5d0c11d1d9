package operation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// StaleError is returned when an approved deployment runs after its stack moved and the plan made now
// differs from the approved one: nothing was called (exit code 1). --replan applies the new plan instead.
type StaleError struct {
	ID, Stack string
	// Moved says which stacks moved since the plan was made: its own, or one whose outputs it reads
	// ("stack Zones: version 7 → 8").
	Moved       []string
	Differences []string
}

// Error says which stacks moved since the plan was made and what changed.
func (e *StaleError) Error() string {
	return fmt.Sprintf("deployment %s is stale: the state it was planned against moved since (%s), and the plan differs:\n  %s\nnothing was changed; propose again (cdkx deploy --propose) or run it with --replan to apply the new plan",
		e.ID, strings.Join(e.Moved, "; "), strings.Join(e.Differences, "\n  "))
}

// movedSince returns, in stack name order, the stacks whose version differs from what the plan of d was
// made against: d's own stack (d.StateVersion) and the stacks whose outputs it read (d.Plan.Reads), as
// now holds them ("stack S: version 3 → 5"; a stack now missing counts as version 0).
func movedSince(d *state.Deployment, now map[string]*state.Stack) []string {
	was := map[string]int64{d.Stack: d.StateVersion}
	if d.Plan != nil {
		for name, v := range d.Plan.Reads {
			if name != d.Stack {
				was[name] = v
			}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(was)) {
		var v int64
		if st := now[name]; st != nil {
			v = st.Version
		}
		if v != was[name] {
			out = append(out, fmt.Sprintf("stack %s: version %d → %d", name, was[name], v))
		}
	}
	return out
}

// TamperedError is returned when a stored deployment would not run what was recorded and approved: its
// stored snapshot is not the one its hash names (Recorded, Stored: the recorded hash and the stored
// snapshot's), or neither its stack nor a stack whose outputs it reads moved since it was planned and the
// plan made now from the snapshot differs from the approved one (Differences). Nothing was called (exit code 1), and --replan does not
// apply: propose the change again.
type TamperedError struct {
	ID, Stack        string
	Recorded, Stored string
	Differences      []string
}

// Error says what does not match and what to do.
func (e *TamperedError) Error() string {
	if e.Recorded != e.Stored {
		return fmt.Sprintf("deployment %s is tampered: its stored snapshot is not the one it was recorded with (recorded hash %s, stored snapshot's %s): nothing was changed; reject or abort it and propose the change again (cdkx deploy --propose)",
			e.ID, orNone(e.Recorded), orNone(e.Stored))
	}
	return fmt.Sprintf("deployment %s is tampered: stack %s and the stacks it reads did not move since it was planned, yet the plan made now from its snapshot differs from the approved one:\n  %s\nnothing was changed; reject or abort it and propose the change again (cdkx deploy --propose)",
		e.ID, e.Stack, strings.Join(e.Differences, "\n  "))
}

func orNone(h string) string {
	if h == "" {
		return "(none)"
	}
	return h
}

// checkSnapshot returns a *TamperedError when d's snapshot (read) is not the one its SnapshotHash names,
// or its plan names another snapshot: the stored record was changed after it was recorded.
func checkSnapshot(d *state.Deployment) error {
	got := state.SnapshotHash(d.Snapshot)
	if got != d.SnapshotHash {
		return &TamperedError{ID: d.ID, Stack: d.Stack, Recorded: d.SnapshotHash, Stored: got}
	}
	if d.Plan != nil && d.Plan.SnapshotHash != "" && d.Plan.SnapshotHash != got {
		return &TamperedError{ID: d.ID, Stack: d.Stack, Recorded: d.Plan.SnapshotHash, Stored: got}
	}
	return nil
}

// planDifferences lists, one line per resource, how plan now differs from the approved one: a step is
// the same only when its whole record is (every field, compared as canonical JSON, keyed by resource
// and op), so that any value a step records binds the approval. A line names the values that differ
// (valueDifferences) and then any other field. An approved plan without Values (recorded by an older
// cdkx) binds only what it recorded: each step's resource, type, op, paths and digest (state.LegacyStep).
func planDifferences(approved, now *state.Plan) []string {
	// An approved plan recorded before plans carried values is compared by what it carried.
	legacy := approved != nil && !approved.Values && len(approved.Steps) > 0
	index := func(p *state.Plan) map[string]state.PlanStep {
		m := map[string]state.PlanStep{}
		if p != nil {
			for _, s := range p.Steps {
				if legacy {
					s = state.LegacyStep(s)
				}
				m[s.Resource+" "+s.Op] = s
			}
		}
		return m
	}
	a, n := index(approved), index(now)
	describe := func(s state.PlanStep) string {
		if len(s.Paths) == 0 {
			return s.Op
		}
		return s.Op + " (" + strings.Join(s.Paths, ", ") + ")"
	}
	var out []string
	for _, k := range sortedKeys(a, n) {
		as, inA := a[k]
		ns, inN := n[k]
		switch {
		case inA && !inN:
			out = append(out, fmt.Sprintf("%s: approved %s; now no such step", as.Resource, describe(as)))
		case !inA && inN:
			out = append(out, fmt.Sprintf("%s: not in the approved plan; now %s", ns.Resource, describe(ns)))
		default:
			values := valueDifferences(as, ns)
			var other []string
			for _, f := range stepFieldsDiffer(as, ns) {
				// The values named, their paths and digest differ with them: say only what else differs.
				if len(values) == 0 || f != "changes" && f != "inputs" && f != "paths" && !strings.HasSuffix(f, "(digest)") {
					other = append(other, f)
				}
			}
			if len(values) == 0 && len(other) == 0 {
				continue
			}
			line := as.Resource + ": " + as.Op
			if len(values) > 0 {
				line += " " + strings.Join(values, "; ")
			}
			if len(other) > 0 {
				if len(values) > 0 {
					line += ";"
				}
				line += " another " + strings.Join(other, ", ")
			}
			out = append(out, line)
		}
	}
	return out
}

// valueDifferences names each changed property or create input whose values differ between the approved
// step a and the step planned now b: `value: approved "v1" → "v2", now "v1" → "EVIL"`, or for a create's
// input `address: approved "10.0.0.1", now "10.0.0.66"`. Values are compact JSON, cut at 80 characters.
func valueDifferences(a, b state.PlanStep) []string {
	show := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		if s := string(data); len(s) > 80 {
			return s[:77] + "..."
		}
		return string(data)
	}
	changes := func(s state.PlanStep) map[string]string {
		m := map[string]string{}
		for _, c := range s.Changes {
			m[c.Name] = show(c.Old) + " → " + show(c.New)
		}
		return m
	}
	var out []string
	ca, cb := changes(a), changes(b)
	for _, k := range sortedKeys(ca, cb) {
		va, inA := ca[k]
		vb, inB := cb[k]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("%s: approved unchanged, now %s", k, vb))
		case !inB:
			out = append(out, fmt.Sprintf("%s: approved %s, now unchanged", k, va))
		case va != vb:
			out = append(out, fmt.Sprintf("%s: approved %s, now %s", k, va, vb))
		}
	}
	for _, k := range sortedKeys(a.Inputs, b.Inputs) {
		va, inA := a.Inputs[k]
		vb, inB := b.Inputs[k]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("%s: approved absent, now %s", k, show(vb)))
		case !inB:
			out = append(out, fmt.Sprintf("%s: approved %s, now absent", k, show(va)))
		case !bytes.Equal(resource.Canonical(va), resource.Canonical(vb)):
			out = append(out, fmt.Sprintf("%s: approved %s, now %s", k, show(va), show(vb)))
		}
	}
	return out
}

// stepFieldsDiffer returns the JSON names of the fields in which two steps differ (their canonical
// JSON), sorted; none when they are the same. "digest" is named for what it stands for: "starting point
// or values (digest)".
func stepFieldsDiffer(a, b state.PlanStep) []string {
	fields := func(s state.PlanStep) map[string]any {
		var m map[string]any
		data, _ := json.Marshal(s) // a PlanStep always encodes
		_ = json.Unmarshal(data, &m)
		return m
	}
	fa, fb := fields(a), fields(b)
	var out []string
	for _, k := range sortedKeys(fa, fb) {
		if !bytes.Equal(resource.Canonical(fa[k]), resource.Canonical(fb[k])) {
			if k == "digest" {
				k = "starting point or values (digest)"
			}
			out = append(out, k)
		}
	}
	return out
}
