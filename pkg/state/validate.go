package state

import (
	"errors"
	"fmt"
	"sort"
)

// Validate checks the invariants a stack's state holds after a run has ended (completed, failed, rolled
// back or interrupted and settled):
//   - every resource is keyed by its own logical ID and has a type and a provider;
//   - no operation is pending;
//   - a resource without a live object (no physical ID) still lists objects left by replacements —
//     otherwise it would be a record of nothing;
//   - a live object publishes its "crn" output;
//   - every recorded dependency is a resource of the stack (dependents are deleted before what they
//     depend on, so a dangling dependency means an object was deleted under a live dependent).
//
// It returns every violation, joined, or nil.
func (s *Stack) Validate() error {
	var errs []error
	ids := make([]string, 0, len(s.Resources))
	for id := range s.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := s.Resources[id]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("stack %s: resource %s: %s", s.Name, id, fmt.Sprintf(format, args...)))
		}
		if r.LogicalID != id {
			bad("recorded under another logical ID (%s)", r.LogicalID)
		}
		if r.Type == "" || r.Provider == "" {
			bad("no type or provider")
		}
		if r.Pending != nil {
			bad("operation %q still pending", r.Pending.Op)
		}
		if r.PhysicalID == "" && len(r.Replaced) == 0 {
			bad("no live object and no replaced object: a record of nothing")
		}
		if r.PhysicalID != "" {
			if _, ok := r.Outputs["crn"]; !ok {
				bad("live object %s without a crn output", r.PhysicalID)
			}
		}
		for _, d := range r.Dependencies {
			if _, ok := s.Resources[d]; !ok {
				bad("depends on %s, which is not in the stack", d)
			}
		}
	}
	return errors.Join(errs...)
}
