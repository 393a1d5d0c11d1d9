package planner

import (
	"slices"
	"strconv"
)

// ElementChange is one changed leaf of a PropertyChange: a scalar, or a list or object compared whole
// (one side absent, empty or of another kind). Path names it from the property: "ttl", "rules[0].port",
// "labels.env", `labels["a.b"]`. Old is nil when the leaf was added, New is nil when it was removed; New
// may be resource.Unknown.
type ElementChange struct {
	Path     string
	Old, New any
}

// Elements breaks c into the leaves that differ, in order (list elements by index, object keys sorted):
// two lists are compared element by element (extra elements are additions or removals), two objects key
// by key; a list or object added or removed whole is broken into its elements as added or removed. Values
// of different kinds, unknown values and empty lists or objects are leaves. Equal values yield nothing.
func (c PropertyChange) Elements() []ElementChange {
	var out []ElementChange
	elements(&out, c.Name, c.Old, c.New)
	if len(out) == 0 && !equal(c.Old, c.New) {
		// Differ in what elements cannot show (a null element against an absent one): the whole value.
		out = append(out, ElementChange{Path: c.Name, Old: c.Old, New: c.New})
	}
	return out
}

// elements appends to out the leaves under path where o and n differ (nil: absent).
func elements(out *[]ElementChange, path string, o, n any) {
	switch ol, nl, ok := lists(o, n); {
	case ok:
		for i := range max(len(ol), len(nl)) {
			var oe, ne any
			if i < len(ol) {
				oe = ol[i]
			}
			if i < len(nl) {
				ne = nl[i]
			}
			elements(out, path+"["+strconv.Itoa(i)+"]", oe, ne)
		}
		return
	}
	switch om, nm, ok := objects(o, n); {
	case ok:
		keys := make([]string, 0, len(om)+len(nm))
		for k := range om {
			keys = append(keys, k)
		}
		for k := range nm {
			if _, both := om[k]; !both {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			elements(out, path+Key(k), om[k], nm[k])
		}
		return
	}
	if o == nil && n == nil || equal(o, n) {
		return
	}
	*out = append(*out, ElementChange{Path: path, Old: o, New: n})
}

// lists returns o and n as lists when both are lists, or one is a non-empty list and the other absent.
func lists(o, n any) (ol, nl []any, ok bool) {
	ol, oList := o.([]any)
	nl, nList := n.([]any)
	switch {
	case oList && nList:
		return ol, nl, true
	case oList && n == nil:
		return ol, nil, len(ol) > 0
	case nList && o == nil:
		return nil, nl, len(nl) > 0
	}
	return nil, nil, false
}

// objects returns o and n as objects when both are objects, or one is a non-empty object and the other
// absent.
func objects(o, n any) (om, nm map[string]any, ok bool) {
	om, oObj := o.(map[string]any)
	nm, nObj := n.(map[string]any)
	switch {
	case oObj && nObj:
		return om, nm, true
	case oObj && n == nil:
		return om, nil, len(om) > 0
	case nObj && o == nil:
		return nil, nm, len(nm) > 0
	}
	return nil, nil, false
}

// Key returns how a path names an object's key: ".key" for a plain identifier (a letter or _, then
// letters, digits or _), else the key quoted as JSON in brackets (`["a.b"]`).
func Key(k string) string {
	if isIdentifier(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
