package planner

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Op is what a step does to one resource.
type Op string

// Step operations.
const (
	OpCreate  Op = "create"
	OpUpdate  Op = "update"
	OpReplace Op = "replace"
	OpDelete  Op = "delete"
	OpSame    Op = "same"
)

// PropertyChange is one top-level property whose value differs between the last applied inputs (Old) and
// the new inputs (New). New may hold resource.Unknown. Absent values are nil.
type PropertyChange struct {
	Name       string
	Old        any
	New        any
	CreateOnly bool
}

// Diff compares old and new inputs of one resource property by property, treating an absent property as
// its schema default. It returns the changed properties sorted by name. A new value holding
// resource.Unknown is reported as changed unless its known parts already differ in nothing but unknowns.
// Values compare as resource.Equal does, without encoding them when they are plain decoded JSON.
func Diff(s resource.Schema, old, new resource.Properties) []PropertyChange {
	var out []PropertyChange
	check := func(name string) {
		ps := s.Properties[name]
		o, n := withDefault(old[name], ps.Default), withDefault(new[name], ps.Default)
		if ps.WriteOnly {
			// State holds a fingerprint of a write-only value, never the value.
			if _, isFP := resource.FingerprintSalt(o); isFP && resource.MatchesFingerprint(o, n) {
				return
			}
			if equal(o, n) {
				return
			}
			out = append(out, PropertyChange{Name: name, Old: sensitive(o), New: sensitive(n), CreateOnly: ps.CreateOnly})
			return
		}
		if equal(o, n) {
			return
		}
		out = append(out, PropertyChange{Name: name, Old: old[name], New: new[name], CreateOnly: ps.CreateOnly})
	}
	for name := range old {
		check(name)
	}
	for name := range new {
		if _, both := old[name]; !both {
			check(name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// equal is resource.Equal(a, b) without encoding whole values (see plainEqual); it falls back to
// resource.Equal for values plainEqual cannot answer for.
func equal(a, b any) bool {
	if eq, ok := plainEqual(a, b); ok {
		return eq
	}
	return resource.Equal(a, b)
}

// plainEqual compares a and b as resource.Equal does — their canonical JSON encodings — without encoding
// them: it walks objects and lists itself (a nil map or list encodes as an empty one), compares strings,
// booleans and null directly, and hands other leaves (numbers, resource.Unknown) to resource.Equal one pair
// at a time, but for strings and json.Numbers written alike (equal, whatever they hold). That is exact because the encoding of an object or a list
// is made of its parts' encodings, and values of different JSON kinds never encode alike. ok is false when
// it meets what it cannot answer for: a value of another type, a number JSON cannot hold (NaN, an
// infinity, a json.Number that is not a JSON number), strings or a key that is not valid UTF-8 (encoding
// would change it). Equal strings and objects whose keys are all equal need no such check: values equal
// byte for byte encode alike.
func plainEqual(a, b any) (eq, ok bool) {
	switch x := a.(type) { // the common leaves, equal as written: no need to know more of them
	case string:
		if y, isString := b.(string); isString && x == y {
			return true, true
		}
	case json.Number:
		if y, isNumber := b.(json.Number); isNumber && x == y {
			return true, true
		}
	}
	ka, kb := kindOf(a), kindOf(b)
	switch {
	case ka == otherKind || kb == otherKind:
		return false, false
	case ka == unknownKind || kb == unknownKind:
		// Unknown encodes as a string: only a leaf can equal it.
		if ka == objectKind || ka == listKind || kb == objectKind || kb == listKind {
			return false, true
		}
		return resource.Equal(a, b), true
	case ka != kb:
		return false, true
	}
	switch ka {
	case objectKind:
		x, y := a.(map[string]any), b.(map[string]any)
		if len(x) != len(y) {
			return false, true
		}
		for k, xv := range x {
			yv, found := y[k]
			if !found {
				if !utf8.ValidString(k) {
					return false, false
				}
				return false, true
			}
			if eq, ok := plainEqual(xv, yv); !ok || !eq {
				return eq, ok
			}
		}
		return true, true
	case listKind:
		x, y := a.([]any), b.([]any)
		if len(x) != len(y) {
			return false, true
		}
		for i := range x {
			if eq, ok := plainEqual(x[i], y[i]); !ok || !eq {
				return eq, ok
			}
		}
		return true, true
	case nullKind:
		return true, true
	case boolKind:
		return a.(bool) == b.(bool), true
	case stringKind:
		x, y := a.(string), b.(string) // not equal (above)
		if !utf8.ValidString(x) || !utf8.ValidString(y) {
			return false, false
		}
		return x == y, true
	}
	return resource.Equal(a, b), true
}

// jsonKind is the kind of JSON value a plain value encodes to.
type jsonKind uint8

const (
	otherKind jsonKind = iota // not plain decoded JSON, or not encodable as it is
	nullKind
	boolKind
	numberKind
	stringKind
	objectKind
	listKind
	unknownKind // resource.Unknown
)

func kindOf(v any) jsonKind {
	switch x := v.(type) {
	case nil:
		return nullKind
	case bool:
		return boolKind
	case string:
		return stringKind
	case map[string]any:
		return objectKind
	case []any:
		return listKind
	case resource.Unknown:
		return unknownKind
	case json.Number:
		if resource.IsJSONNumber(string(x)) {
			return numberKind
		}
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return numberKind
		}
	case float32:
		if f := float64(x); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return numberKind
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return numberKind
	}
	return otherKind
}

func withDefault(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

// Decision is what to do with a resource given its recorded state and its new inputs.
type Decision struct {
	Op      Op
	Changes []PropertyChange
	// Reason explains a replacement, e.g. `create-only property "name" changed`.
	Reason string
	// DeleteBeforeReplace is set for a replacement whose old object must go before the new one is created.
	DeleteBeforeReplace bool
}

// Decide chooses the operation for one resource: create when it has no live object, same when its inputs
// are equal after defaults, replace when its type, provider or a create-only property changed, update
// otherwise. It is used both for the plan (inputs may hold resource.Unknown) and by the engine just before
// the provider call (inputs fully resolved).
func Decide(s resource.Schema, old *state.Resource, resourceType, provider string, inputs resource.Properties,
	metadata map[string]any) Decision {
	if old == nil || old.PhysicalID == "" {
		return Decision{Op: OpCreate}
	}
	dbr := s.DeleteBeforeReplace
	if v, ok := metadata["cdkx:deleteBeforeReplace"].(bool); ok {
		dbr = v
	}
	if old.Type != resourceType || old.Provider != provider {
		return Decision{Op: OpReplace, DeleteBeforeReplace: true,
			Reason:  fmt.Sprintf("type changed from %s (%s) to %s (%s)", old.Type, old.Provider, resourceType, provider),
			Changes: Diff(s, old.Inputs, inputs)}
	}
	changes := Diff(s, old.Inputs, inputs)
	if len(changes) == 0 {
		return Decision{Op: OpSame}
	}
	var createOnly []string
	for _, c := range changes {
		if c.CreateOnly {
			createOnly = append(createOnly, fmt.Sprintf("%q", c.Name))
		}
	}
	if len(createOnly) > 0 && dbr && len(s.Identity) > 0 {
		// A replacement that renames the object can create the new one first.
		for _, c := range changes {
			if slices.Contains(s.Identity, c.Name) {
				dbr = false
			}
		}
		if v, ok := metadata["cdkx:deleteBeforeReplace"].(bool); ok {
			dbr = v
		}
	}
	if len(createOnly) > 0 {
		noun := "property"
		if len(createOnly) > 1 {
			noun = "properties"
		}
		return Decision{Op: OpReplace, Changes: changes, DeleteBeforeReplace: dbr,
			Reason: fmt.Sprintf("create-only %s %s changed", noun, strings.Join(createOnly, ", "))}
	}
	return Decision{Op: OpUpdate, Changes: changes}
}

// sensitive hides a write-only value in a PropertyChange (nil and unknown values stay as they are).
func sensitive(v any) any {
	if v == nil {
		return nil
	}
	if _, unknown := v.(resource.Unknown); unknown {
		return v
	}
	return resource.Sensitive
}

// ForceReplace turns d (a decision about a resource with a live object) into a replacement forced by
// --replace: same or update become replace, keeping the changes; a create or a replacement stays as it is.
// The old and new objects share their identity, so a delete-before-replace type (or the resource's
// cdkx:deleteBeforeReplace metadata) deletes first.
func ForceReplace(s resource.Schema, d Decision, metadata map[string]any) Decision {
	if d.Op != OpSame && d.Op != OpUpdate {
		return d
	}
	dbr := s.DeleteBeforeReplace
	if v, ok := metadata["cdkx:deleteBeforeReplace"].(bool); ok {
		dbr = v
	}
	return Decision{Op: OpReplace, Changes: d.Changes, DeleteBeforeReplace: dbr, Reason: "forced by --replace"}
}
