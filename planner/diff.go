package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

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
func Diff(s resource.Schema, old, new resource.Properties) []PropertyChange {
	names := map[string]bool{}
	for k := range old {
		names[k] = true
	}
	for k := range new {
		names[k] = true
	}
	var out []PropertyChange
	for name := range names {
		ps := s.Properties[name]
		o, n := withDefault(old[name], ps.Default), withDefault(new[name], ps.Default)
		if ps.WriteOnly {
			// State holds a fingerprint of a write-only value, never the value.
			if _, isFP := resource.FingerprintSalt(o); isFP && resource.MatchesFingerprint(o, n) {
				continue
			}
			if resource.Equal(o, n) {
				continue
			}
			out = append(out, PropertyChange{Name: name, Old: sensitive(o), New: sensitive(n), CreateOnly: ps.CreateOnly})
			continue
		}
		if resource.Equal(o, n) {
			continue
		}
		out = append(out, PropertyChange{Name: name, Old: old[name], New: new[name], CreateOnly: ps.CreateOnly})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
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
