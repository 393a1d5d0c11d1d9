package resource

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Kind is the JSON type a property must have.
type Kind string

// Property kinds. Any accepts every JSON value.
const (
	KindString  Kind = "string"
	KindInteger Kind = "integer"
	KindNumber  Kind = "number"
	KindBool    Kind = "boolean"
	KindList    Kind = "list"
	KindObject  Kind = "object"
	KindAny     Kind = "any"
)

// PropertySchema describes one property of a resource type.
type PropertySchema struct {
	Kind        Kind
	Required    bool
	Enum        []string        // allowed values of a string
	Items       *PropertySchema // element schema of a list
	Description string
	// CreateOnly properties cannot change in place: a change replaces the object.
	CreateOnly bool
	// WriteOnly properties are sent to the provider but never stored in state or shown.
	WriteOnly bool
	// Default is used when the property is absent, for diffing (nil: no default).
	Default any
	// UpdateNote, when set, is the harm an in-place change of this property does, in a few words that a
	// plan shows beside the change (Hetzner's serverType: "the server is powered off while it is resized").
	UpdateNote string
}

// Schema describes a resource type: its properties, its outputs and how it is replaced.
type Schema struct {
	Type        string // "Provider::Domain::Type"
	Description string
	Properties  map[string]PropertySchema
	// Outputs lists the output attributes the type publishes (besides "crn", which every type has).
	Outputs []string
	// StableOutputs lists the outputs an in-place update never changes (e.g. an ID derived from create-only
	// properties). The planner predicts them from state; other outputs of an updated resource are unknown
	// until deploy.
	StableOutputs []string
	// ReplaceNote, when set, is the harm a replacement of an object of this type does, in a few words that
	// a plan shows beside the replacement (a Hetzner server: "its disk and everything on it are lost").
	ReplaceNote string
	// DeleteBeforeReplace is set when two objects of this type with the same Identity cannot coexist, so
	// the old one must be deleted before the new one is created.
	DeleteBeforeReplace bool
	// Identity lists the properties that name an object at the provider (e.g. a zone's name). When
	// DeleteBeforeReplace is set and a replacement changes one of them, old and new objects can coexist and
	// the replacement is create-before-delete after all. Empty: every replacement of a DeleteBeforeReplace
	// type deletes first.
	Identity []string
	// Serialize lists the groups whose changes the provider accepts one at a time (see SerialKey): a change
	// of an object of this type waits for every other change with an equal key. Empty: no such limit.
	Serialize []SerialKey
	// After lists the objects of other types in the same stack that an object of this type comes after
	// (created after them, deleted before them) although it reads nothing from them (see After).
	After []After
	// AllowUnknownProperties accepts properties not listed in Properties.
	AllowUnknownProperties bool
	// Check, when set, runs type-specific rules after the generic ones (e.g. "name must end with a dot").
	// Values for which unknown returns true are not known yet and must be skipped.
	Check func(props Properties, unknown IsUnknownFunc) []FieldError
	// CheckReferences, when set, runs rules that need the resources the properties point at through
	// tokens (e.g. a binding's queue must live in the binding's vhost), before any provider call.
	CheckReferences func(props Properties, lookup TargetLookup) []FieldError
	// CheckChange, when set, runs rules that need the recorded inputs as well as the new ones (e.g. "a
	// volume cannot shrink"): the planner calls it for every in-place update, with old the inputs state
	// records and new the predicted ones, and reports its errors like validation's, before any provider
	// call. Values for which unknown returns true are known only at deploy and must be skipped.
	CheckChange func(old, new Properties, unknown IsUnknownFunc) []FieldError
	// CheckStack, when set, runs rules that need the other resources of the stack (e.g. "one primary IP of
	// each type per server"): validation calls it with this resource's properties as written and a view of
	// its stack, before any provider call.
	CheckStack func(props Properties, stack StackView) []FieldError
}

// StackView is what a Schema.CheckStack sees of the resource's stack. Properties are as written in the
// template (tokens unresolved).
type StackView struct {
	// Self is the checked resource's logical ID.
	Self string
	// Lookup resolves a token of the checked resource to the resource it points at (see TargetLookup);
	// a {stackRef, outputKey} whose output is a {ref, attr} token resolves to that token's target in its
	// own stack, whose properties hold tokens of that stack: do not resolve those with Lookup.
	Lookup TargetLookup
	// OfType returns the stack's resources of a type, the checked one included, in template order.
	OfType func(resourceType string) []StackResource
}

// StackResource is one resource of a stack as a StackView shows it.
type StackResource struct {
	LogicalID  string
	Properties Properties
}

// After orders an object after the objects of another type that hang off the same parent, without a
// token between them: at Hetzner a load balancer or server attached to a network needs the network's
// subnets to exist first, and must leave the network before they can be deleted. Users need no dependsOn
// for it: assembly.Imply finds such pairs in each stack and the planner orders them like dependsOn.
//
// An object of this type comes after each object of Type whose OtherProperty holds the same value (the
// same token as written, or the same literal) as this object's Property; when Property holds a list, any
// element matches.
type After struct {
	Type          string // the other type, e.g. "Hetzner::Networking::Subnet"
	Property      string // this type's property naming the parent, e.g. "networkId" or "networks"
	OtherProperty string // the other type's property naming the parent, e.g. "networkId"
}

// TargetLookup resolves a {ref, attr} token as written in a template to the resource it points at in the
// same stack: that resource's type and its properties as written (tokens unresolved). ok is false for a
// value that is not such a token or whose target does not exist.
type TargetLookup func(token any) (resourceType string, props Properties, ok bool)

// CreateOnly returns the names of the create-only properties, sorted.
func (s Schema) CreateOnly() []string {
	var out []string
	for name, p := range s.Properties {
		if p.CreateOnly {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// HasWriteOnly reports whether any property of the type is write-only (a secret: see StoredInputs).
func (s Schema) HasWriteOnly() bool {
	for _, p := range s.Properties {
		if p.WriteOnly {
			return true
		}
	}
	return false
}

// HasOutput reports whether attr is an output attribute of the type ("crn" always is).
func (s Schema) HasOutput(attr string) bool {
	return attr == "crn" || slices.Contains(s.Outputs, attr)
}

// FieldError is one property that fails its schema. Path is relative to the properties object,
// e.g. "records[2]" or "ttl".
type FieldError struct {
	Path    string
	Message string
}

// IsUnknownFunc reports whether a value is not known yet (a token) and must not be type-checked.
type IsUnknownFunc func(v any) bool

// Validate checks props against the schema: required properties, kinds, enums and unknown names.
// Values for which unknown returns true (tokens) pass any check but Required. It returns every problem,
// sorted by path.
func (s Schema) Validate(props Properties, unknown IsUnknownFunc) []FieldError {
	var errs []FieldError
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ps := s.Properties[name]
		v, ok := props[name]
		if !ok || v == nil {
			if ps.Required {
				errs = append(errs, FieldError{Path: name, Message: fmt.Sprintf("required property %q is missing", name)})
			}
			continue
		}
		errs = append(errs, ps.check(name, v, unknown)...)
	}
	if !s.AllowUnknownProperties {
		for name := range props {
			if _, ok := s.Properties[name]; !ok {
				errs = append(errs, FieldError{Path: name, Message: fmt.Sprintf("unknown property %q; %s has %s",
					name, s.Type, strings.Join(names, ", "))})
			}
		}
	}
	if s.Check != nil {
		errs = append(errs, s.Check(props, unknown)...)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return errs
}

func (ps PropertySchema) check(path string, v any, unknown IsUnknownFunc) []FieldError {
	if unknown != nil && unknown(v) {
		return nil
	}
	if _, ok := v.(Unknown); ok {
		return nil
	}
	bad := func(want string) []FieldError {
		return []FieldError{{Path: path, Message: fmt.Sprintf("must be %s, got %s", want, describe(v))}}
	}
	switch ps.Kind {
	case KindString:
		s, ok := v.(string)
		if !ok {
			return bad("a string")
		}
		if len(ps.Enum) > 0 && !slices.Contains(ps.Enum, s) {
			return []FieldError{{Path: path, Message: fmt.Sprintf("must be one of %s, got %q", strings.Join(ps.Enum, ", "), s)}}
		}
	case KindInteger:
		n, ok := v.(json.Number)
		if !ok {
			return bad("an integer")
		}
		if _, err := n.Int64(); err != nil {
			return bad("an integer")
		}
	case KindNumber:
		if _, ok := v.(json.Number); !ok {
			return bad("a number")
		}
	case KindBool:
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
	case KindList:
		list, ok := v.([]any)
		if !ok {
			return bad("a list")
		}
		var errs []FieldError
		if ps.Items != nil {
			for i, e := range list {
				errs = append(errs, ps.Items.check(fmt.Sprintf("%s[%d]", path, i), e, unknown)...)
			}
		}
		return errs
	case KindObject:
		if _, ok := v.(map[string]any); !ok {
			return bad("an object")
		}
	}
	return nil
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
