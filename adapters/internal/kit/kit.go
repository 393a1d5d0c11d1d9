// Package kit is the resource-type table every provider adapter dispatches its calls through.
//
// A provider lists its types in one literal Table, each Type with its schema and its calls, beside what
// it declares about itself; its Info is the Table's, and its constructor embeds the Table's Dispatch,
// which serves Create, Read, Update, Delete and Locate: it finds the type of each request (or answers the
// one unknown-type error) and applies the rules every adapter shares: an Update of a type with only
// create-only properties is an error, a Delete of an object already gone is success, and the object of a
// type named by its inputs is located by reading it.
package kit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Type is one resource type of the provider P: its schema and its calls. Each call receives the provider
// first, so that a table names the provider's methods as method expressions, e.g. (*Provider).createZone.
type Type[P any] struct {
	Schema resource.Schema
	// Create, Read and Delete are required. Delete may answer an error wrapping resource.ErrNotFound for
	// an object already gone: Table.Delete makes that success.
	Create func(P, context.Context, resource.CreateRequest) (resource.CreateResult, error)
	Read   func(P, context.Context, resource.ReadRequest) (resource.ReadResult, error)
	Delete func(P, context.Context, resource.DeleteRequest) error
	// Update changes an object in place; nil when every property is create-only, and then Table.Update
	// is an error naming the changed properties.
	Update func(P, context.Context, resource.UpdateRequest) (resource.UpdateResult, error)
	// Locate finds the object a create with these properties made (by name, or by parent and key) and
	// returns its physical ID, or an error wrapping resource.ErrNotFound.
	Locate func(P, context.Context, resource.CreateRequest) (string, error)
	// ID, for a type whose objects are named by their inputs and used when Locate is nil, computes
	// without a request the physical ID a create with these properties gives; Table.Locate then reads
	// that object to tell whether it exists.
	ID func(resource.Properties) (string, error)
}

// Table holds a provider's types, in the order Info lists them, and what the provider declares besides.
// It is immutable and safe for concurrent use.
type Table[P any] struct {
	info  resource.ProviderInfo
	types []Type[P]
	index map[string]int
}

// New returns the table of a provider's types. info is what the provider declares besides its schemas;
// info.Name (as written in templates, e.g. "powerdns") prefixes the errors the table makes. New panics
// when two types share a name or a type lacks Create, Read or Delete: the table is a literal of the
// adapter, checked when its package loads.
func New[P any](info resource.ProviderInfo, types ...Type[P]) *Table[P] {
	t := &Table[P]{info: info, types: types, index: make(map[string]int, len(types))}
	for i, k := range types {
		if _, dup := t.index[k.Schema.Type]; dup {
			panic(fmt.Sprintf("%s: type %s is listed twice", info.Name, k.Schema.Type))
		}
		if k.Create == nil || k.Read == nil || k.Delete == nil {
			panic(fmt.Sprintf("%s: type %s lacks Create, Read or Delete", info.Name, k.Schema.Type))
		}
		t.index[k.Schema.Type] = i
	}
	return t
}

// Info returns what the provider declares, with the schema of every type in the table's order (a new
// slice each time).
func (t *Table[P]) Info() resource.ProviderInfo {
	info := t.info
	info.Schemas = make([]resource.Schema, len(t.types))
	for i, k := range t.types {
		info.Schemas[i] = k.Schema
	}
	return info
}

// Type returns the type named resourceType, or an error listing the known types in the table's order,
// e.g. `powerdns: unknown resource type "X" (known: PowerDNS::DNS::Zone, PowerDNS::DNS::RecordSet)`.
func (t *Table[P]) Type(resourceType string) (*Type[P], error) {
	if i, ok := t.index[resourceType]; ok {
		return &t.types[i], nil
	}
	known := make([]string, len(t.types))
	for i, k := range t.types {
		known[i] = k.Schema.Type
	}
	return nil, fmt.Errorf("%s: unknown resource type %q (known: %s)", t.info.Name, resourceType, strings.Join(known, ", "))
}

// For returns the calls of the provider p routed through the table, for p's constructor to embed.
func (t *Table[P]) For(p P) Dispatch[P] { return Dispatch[P]{table: t, p: p} }

// Dispatch is a provider's Create, Read, Update, Delete and Locate, routed to the type of each request.
// A provider embeds it, set by its constructor with Table.For; a zero Dispatch answers every call with an
// error saying so.
type Dispatch[P any] struct {
	table *Table[P]
	p     P
}

func (d Dispatch[P]) lookup(resourceType string) (*Type[P], error) {
	if d.table == nil {
		return nil, fmt.Errorf("%T was not made by its constructor (New)", d.p)
	}
	return d.table.Type(resourceType)
}

// Create calls the Create of req's type.
func (d Dispatch[P]) Create(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	k, err := d.lookup(req.Type)
	if err != nil {
		return resource.CreateResult{}, err
	}
	return k.Create(d.p, ctx, req)
}

// Read calls the Read of req's type.
func (d Dispatch[P]) Read(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	k, err := d.lookup(req.Type)
	if err != nil {
		return resource.ReadResult{}, err
	}
	return k.Read(d.p, ctx, req)
}

// Update calls the Update of req's type; a type without one gives an error naming req.Changed.
func (d Dispatch[P]) Update(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	k, err := d.lookup(req.Type)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if k.Update == nil {
		return resource.UpdateResult{}, fmt.Errorf("%s: %s cannot change in place (changed: %s); every property is create-only",
			d.table.info.Name, req.Type, strings.Join(req.Changed, ", "))
	}
	return k.Update(d.p, ctx, req)
}

// Delete calls the Delete of req's type; an error wrapping resource.ErrNotFound (the object is gone
// already) is success.
func (d Dispatch[P]) Delete(ctx context.Context, req resource.DeleteRequest) error {
	k, err := d.lookup(req.Type)
	if err != nil {
		return err
	}
	if err := k.Delete(d.p, ctx, req); !errors.Is(err, resource.ErrNotFound) {
		return err
	}
	return nil
}

// Locate calls the Locate of req's type. A type with ID instead reads the object of that ID: its ID, or
// the read's error as "locate TYPE ID: …" (wrapping resource.ErrNotFound when it is gone). A type with
// neither gives an error wrapping resource.ErrCannotLocate.
func (d Dispatch[P]) Locate(ctx context.Context, req resource.CreateRequest) (string, error) {
	k, err := d.lookup(req.Type)
	if err != nil {
		return "", err
	}
	switch {
	case k.Locate != nil:
		return k.Locate(d.p, ctx, req)
	case k.ID == nil:
		return "", fmt.Errorf("%s: %s: %w", d.table.info.Name, req.Type, resource.ErrCannotLocate)
	}
	id, err := k.ID(req.Properties)
	if err != nil {
		return "", err
	}
	if _, err := k.Read(d.p, ctx, resource.ReadRequest{Type: req.Type, PhysicalID: id, Properties: req.Properties}); err != nil {
		return "", fmt.Errorf("locate %s %s: %w", req.Type, id, err)
	}
	return id, nil
}

// IsUnknown reports whether v is not known yet: resource.Unknown, or a token as unknown tells (schema
// checks run on templates, before tokens are resolved). A nil unknown knows every other value.
func IsUnknown(v any, unknown resource.IsUnknownFunc) bool {
	if _, ok := v.(resource.Unknown); ok {
		return true
	}
	return unknown != nil && v != nil && unknown(v)
}

// Known returns v, or nil when v is not known yet (IsUnknown).
func Known(v any, unknown resource.IsUnknownFunc) any {
	if IsUnknown(v, unknown) {
		return nil
	}
	return v
}

// KnownString returns v as a string when it is a known string.
func KnownString(v any, unknown resource.IsUnknownFunc) (string, bool) {
	s, ok := Known(v, unknown).(string)
	return s, ok
}
