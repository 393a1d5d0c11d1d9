package assembly

import (
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Validate checks every resource of a loaded assembly against the schemas of the catalog: the provider
// and type must be known (an unknown one gets the nearest known name as a suggestion, and the known
// names), the properties must pass the type's schema (tokens count as values not known yet), and every
// {ref, attr} must name an output attribute of its target's type. Resources whose type Load found
// malformed, and stacks whose template is missing, are skipped: Load reported them.
//
// The diagnostics are sorted; all are errors. catalog must not be nil. Validate reads the tokens Load
// recorded of each resource instead of walking its properties again, and drops them: the properties must
// be as Load left them (a resource replaced since, or a stack built otherwise, is walked).
func Validate(a *Assembly, catalog resource.Catalog) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, s := range a.Stacks {
		if s.Missing {
			continue
		}
		// The schema of each resource by logical ID, one copy for each provider and type: a schema is a
		// few hundred bytes, and a stack may have 100,000 resources of one type.
		schemas := make(map[string]*resource.Schema, len(s.Resources))
		shared := map[[2]string]*resource.Schema{}
		refs, view := targetLookup(nil, s), stackView(a, s)
		for _, r := range s.Resources {
			schema, ok, rds := validateResource(s, r, catalog, refs, view)
			ds = append(ds, rds...)
			if !ok {
				continue
			}
			key := [2]string{r.Provider, r.Type}
			if shared[key] == nil {
				first := schema // copied once: taking schema's address would move each one to the heap
				shared[key] = &first
			}
			schemas[r.LogicalID] = shared[key]
		}
		ds = append(ds, validateAttrs(s, schemas)...)
		s.recorded = nil // no walk after this one needs it
	}
	ds.Sort()
	return ds
}

// validateResource checks one resource; ok is true when its schema was found.
func validateResource(s *Stack, r *Resource, catalog resource.Catalog, refs resource.TargetLookup,
	view resource.StackView) (schema resource.Schema, ok bool, ds diag.Diagnostics) {
	if _, _, _, valid := resource.ParseType(r.Type); !valid {
		return schema, false, nil
	}
	schema, providerKnown, ok := catalog.Schema(r.Provider, r.Type)
	switch {
	case !providerKnown:
		ds = append(ds, unknownProvider(s, r, catalog))
	case !ok:
		types := catalog.Types(r.Provider)
		ds.Errorf(s.File, r.Path+".type", "unknown type %q for provider %q%s", r.Type, r.Provider, typeSuggestion(r.Type, types))
		ds[0].Detail = fmt.Sprintf("check the spelling of \"type\"; the adapter of %q serves %s", r.Provider, listOrNone(types))
	default:
		errs := schema.Validate(r.Properties, isToken)
		if schema.CheckReferences != nil {
			errs = append(errs, schema.CheckReferences(r.Properties, refs)...)
		}
		if schema.CheckStack != nil {
			view.Self = r.LogicalID
			errs = append(errs, schema.CheckStack(r.Properties, view)...)
		}
		for _, fe := range errs {
			props := r.Path + ".properties" // rendered only for what is reported
			at := props
			if fe.Path != "" {
				at = JoinPath(props, fe.Path)
			}
			ds.Errorf(s.File, at, "%s", fe.Message)
		}
	}
	return schema, ok && providerKnown, ds
}

// unknownProvider reports r's provider, which no adapter serves. When the provider was not written but
// derived from the type's first segment, the suggestion is the nearest type any provider serves
// ("PowerDSN::DNS::Zone" → "PowerDNS::DNS::Zone"); else the nearest provider name.
func unknownProvider(s *Stack, r *Resource, catalog resource.Catalog) diag.Diagnostic {
	names := catalog.Names()
	at, what, near := r.Path+".provider", "\"provider\"", suggestion(r.Provider, names)
	if r.ProviderFromType {
		var types []string
		for _, p := range names {
			types = append(types, catalog.Types(p)...)
		}
		at, what, near = r.Path+".type", "the first segment of \"type\"", typeSuggestion(r.Type, types)
	}
	return diag.Diagnostic{Severity: diag.Error, File: s.File, Path: at,
		Summary: fmt.Sprintf("unknown provider %q of resource type %s%s", r.Provider, r.Type, near),
		Detail: fmt.Sprintf("no cdkx adapter serves it: check the spelling of %s (cdkx knows %s), or use a cdkx "+
			"release that has an adapter for %q", what, listOrNone(names), r.Provider)}
}

// stackView returns what a resource.Schema.CheckStack sees of s (Self unset): its token lookup, which
// also follows stackRefs through a, and its resources by type, indexed on first use.
func stackView(a *Assembly, s *Stack) resource.StackView {
	var byType map[string][]resource.StackResource
	return resource.StackView{
		Lookup: targetLookup(a, s),
		OfType: func(resourceType string) []resource.StackResource {
			if byType == nil {
				byType = map[string][]resource.StackResource{}
				for _, r := range s.Resources {
					byType[r.Type] = append(byType[r.Type], resource.StackResource{LogicalID: r.LogicalID, Properties: r.Properties})
				}
			}
			return byType[resourceType]
		},
	}
}

// targetLookup resolves {ref, attr} tokens to the resources of s they point at and, when a is not nil,
// {stackRef, outputKey} tokens whose output, in its own stack of a, is a {ref, attr} token to the resource
// that one points at (whose properties then hold tokens of that other stack, which the lookup must not be
// asked to resolve: CheckReferences, which follows chains of tokens, gets a lookup without a).
func targetLookup(a *Assembly, s *Stack) resource.TargetLookup {
	return func(v any) (string, resource.Properties, bool) {
		t, ok := AsToken(v)
		if !ok {
			return "", nil, false
		}
		in := s
		if t.StackRef != "" {
			if a == nil {
				return "", nil, false
			}
			if in = a.Stack(t.StackRef); in == nil || in.Outputs[t.OutputKey] == nil {
				return "", nil, false
			}
			if t, ok = AsToken(in.Outputs[t.OutputKey].Value); !ok || t.StackRef != "" {
				return "", nil, false
			}
		}
		if t.Ref == "" {
			return "", nil, false
		}
		target := in.Resource(t.Ref)
		if target == nil {
			return "", nil, false
		}
		return target.Type, target.Properties, true
	}
}

// isToken is the resource.IsUnknownFunc of validation: a token's value is known only at deploy.
func isToken(v any) bool {
	_, ok := AsToken(v)
	return ok
}

// validateAttrs checks that every {ref, attr} of s names an output attribute of its target's type, for
// targets whose schema is known.
func validateAttrs(s *Stack, schemas map[string]*resource.Schema) diag.Diagnostics {
	return eachStackToken(s, func(t Token, at *jsonPath) diag.Diagnostics {
		schema, ok := schemas[t.Ref]
		if isStackRef(t) || t.Attr == "" || !ok || schema.HasOutput(t.Attr) {
			return nil
		}
		var ds diag.Diagnostics
		attrs := sortedUnique(append([]string{"crn"}, schema.Outputs...))
		ds.Errorf(s.File, at.String(), "resource %s (%s) has no output %q%s", t.Ref, s.Resource(t.Ref).Type, t.Attr,
			suggestion(t.Attr, attrs))
		ds[0].Detail = "its outputs: " + listOrNone(attrs)
		return ds
	})
}
