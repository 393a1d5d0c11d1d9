package assembly

import (
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// template is a parsed stack template.
type template struct {
	resources []*Resource // sorted by logical ID
	outputs   map[string]*Output
	legacy    bool
}

// parseTemplate reads a stack template's bytes; file names it in diagnostics; a leading UTF-8 byte order
// mark is ignored. It returns nil when the template is not valid JSON or not in a layout cdkx reads.
// Resources and outputs with problems are kept (with what could be read) so that references to them do not
// add errors of their own.
func parseTemplate(file string, data []byte) (*template, diag.Diagnostics) {
	f := &fields{file: file}
	data = trimBOM(data)
	root, found, err := decode(data)
	if err != nil {
		return nil, diag.Diagnostics{jsonError(file, data, err)}
	}
	top, ok := root.(*object)
	if !ok {
		f.errorf("", "a template must be a JSON object, got %s", describe(root))
		return nil, f.ds
	}
	t := &template{outputs: map[string]*Output{}, legacy: isLegacy(top)}
	switch {
	case t.legacy:
		f.warnf("", "the flat template layout (resources at the top level) is deprecated")
		f.detail("synthesize the app again with a current cdkx, which writes {\"resources\": {…}, \"outputs\": {…}}")
		t.resources = f.resources("", top)
		f.duplicates(found.dups, "", "logical ID")
	case top.has("resources") || top.has("outputs") || len(top.keys) == 0:
		f.unknownKeys("", top, "resources", "outputs")
		if v, ok := top.get("resources"); ok {
			if o, ok := f.object("resources", v); ok {
				t.resources = f.resources("resources", o)
			}
		}
		if v, ok := top.get("outputs"); ok {
			if o, ok := f.object("outputs", v); ok {
				t.outputs = f.outputs(o)
			}
		}
		f.duplicates(found.dups, "resources", "logical ID")
	default:
		f.errorf("", "unrecognized template layout: no \"resources\" or \"outputs\" key, and not a flat map of resources")
		f.detail("want {\"resources\": {ID: {\"type\": …}}, \"outputs\": {…}}")
		return nil, f.ds
	}
	f.numbers(found.numbers)
	return t, f.ds
}

// isLegacy reports whether top is the legacy flat layout: no resources/outputs keys, and every value an
// object with a "type" string.
func isLegacy(top *object) bool {
	if len(top.keys) == 0 || top.has("resources") || top.has("outputs") {
		return false
	}
	for _, v := range top.vals {
		o, ok := v.(*object)
		if !ok {
			return false
		}
		if _, ok := o.vals["type"].(string); !ok {
			return false
		}
	}
	return true
}

// resources reads the map of resources at path, sorted by logical ID.
func (f *fields) resources(path string, o *object) []*Resource {
	out := make([]*Resource, 0, len(o.keys))
	for _, id := range o.keys {
		out = append(out, f.resource(JoinPath(path, id), id, o.vals[id]))
	}
	slices.SortFunc(out, func(a, b *Resource) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return out
}

// resource reads one resource. It always returns one, with the fields that could be read.
func (f *fields) resource(path, id string, v any) *Resource {
	r := &Resource{LogicalID: id, Path: path, Properties: resource.Properties{}}
	f.id(path, "logical ID", id) // reported; the resource is still read
	o, ok := f.object(path, v)
	if !ok {
		return r
	}
	f.unknownKeys(path, o, "type", "provider", "properties", "metadata", "dependsOn")
	r.Type = f.resourceType(path, o)
	if p, ok := o.get("provider"); ok {
		r.Provider, _ = f.name(path+".provider", p)
	} else {
		r.Provider, r.ProviderFromType = defaultProvider(r.Type), true
	}
	if p, ok := o.get("properties"); ok {
		if p, ok := f.object(path+".properties", p); ok {
			r.Properties = plain(p).(map[string]any)
		}
	}
	if m, ok := o.get("metadata"); ok {
		if m, ok := f.object(path+".metadata", m); ok {
			r.Metadata = plain(m).(map[string]any)
		}
	}
	r.DependsOn = f.strings(path, o, "dependsOn")
	return r
}

// resourceType returns the resource's type, or the string as written when it is not of the shape
// Provider::Domain::Type (and reports it).
func (f *fields) resourceType(path string, o *object) string {
	v, ok := f.required(path, o, "type")
	if !ok {
		return ""
	}
	t, ok := f.string(path+".type", v)
	if !ok {
		return ""
	}
	if _, _, _, ok := resource.ParseType(t); !ok {
		f.errorf(path+".type", "invalid type %q: want Provider::Domain::Type", t)
		f.detail("for example \"PowerDNS::DNS::Zone\"")
	} else {
		f.printable(path+".type", "type", t)
	}
	return t
}

// defaultProvider is the provider of a resource without a "provider" key: the first segment of its type,
// lower-cased ("" when the type is malformed).
func defaultProvider(typ string) string {
	p, _, _, ok := resource.ParseType(typ)
	if !ok {
		return ""
	}
	return strings.ToLower(p)
}

// outputs reads the template's outputs.
func (f *fields) outputs(o *object) map[string]*Output {
	out := make(map[string]*Output, len(o.keys))
	for _, key := range o.keys {
		path := JoinPath("outputs", key)
		out[key] = &Output{Key: key, Path: path}
		f.id(path, "output key", key) // reported; the output is still read
		v, ok := f.object(path, o.vals[key])
		if !ok {
			continue
		}
		f.unknownKeys(path, v, "value", "description")
		out[key].Value = plain(v.vals["value"])
		out[key].Description = f.optionalString(path, v, "description")
	}
	return out
}
