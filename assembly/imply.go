package assembly

import (
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Imply sets each resource's Implied dependencies from its schema's After rules (resource.Schema.After):
// the resources of the same stack, of the rule's Type, whose OtherProperty holds the same value as the
// resource's Property (a token as written, or a literal; an integer string and the integer match). It
// runs after Validate and changes nothing else; a resource whose type lookup does not know is skipped.
// It takes O(R + M) time per stack for R resources and M matches.
func Imply(a *Assembly, lookup resource.SchemaLookup) {
	for _, s := range a.Stacks {
		// byValue[type][otherProperty][value] lists the logical IDs holding value, in template order.
		byValue := map[string]map[string]map[string][]string{}
		type ruled struct {
			r     *Resource
			rules []resource.After
		}
		var withRules []ruled
		for _, r := range s.Resources {
			schema, _, ok := lookup(r.Provider, r.Type)
			if ok && len(schema.After) > 0 {
				withRules = append(withRules, ruled{r, schema.After})
			}
		}
		if len(withRules) == 0 {
			continue
		}
		wanted := map[string]map[string]bool{} // type → other properties the rules read
		for _, w := range withRules {
			for _, rule := range w.rules {
				if wanted[rule.Type] == nil {
					wanted[rule.Type] = map[string]bool{}
				}
				wanted[rule.Type][rule.OtherProperty] = true
			}
		}
		for _, r := range s.Resources {
			for prop := range wanted[r.Type] {
				v, ok := r.Properties[prop]
				if !ok {
					continue
				}
				if byValue[r.Type] == nil {
					byValue[r.Type] = map[string]map[string][]string{}
				}
				if byValue[r.Type][prop] == nil {
					byValue[r.Type][prop] = map[string][]string{}
				}
				key := valueKey(v)
				byValue[r.Type][prop][key] = append(byValue[r.Type][prop][key], r.LogicalID)
			}
		}
		for _, w := range withRules {
			var implied []string
			for _, rule := range w.rules {
				v := w.r.Properties[rule.Property]
				values := []any{v}
				if list, ok := v.([]any); ok {
					values = list
				}
				for _, e := range values {
					if e == nil {
						continue
					}
					for _, id := range byValue[rule.Type][rule.OtherProperty][valueKey(e)] {
						if id != w.r.LogicalID {
							implied = append(implied, id)
						}
					}
				}
			}
			slices.Sort(implied)
			w.r.Implied = slices.Compact(implied)
		}
	}
}

// valueKey is the text two matching values share: a string as it is (so "5" matches 5), anything else
// (numbers, tokens) as canonical JSON.
func valueKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(resource.Canonical(v))
}
