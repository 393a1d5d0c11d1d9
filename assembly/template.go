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
	recorded  []recorded  // what the decoder found in each of resources, in the same order
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
	// The resources of the current layout are objects at level 3 ({"resources": {ID: {…}}}): the
	// decoder records their tokens, and builds their properties as maps, in one pass.
	root, found, err := decodeBelow(data, nil, 3)
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
		t.resources, t.recorded = f.resources("", top)
		f.duplicates(found.dups, "", "logical ID")
	case top.has("resources") || top.has("outputs") || len(top.keys) == 0:
		f.unknownKeys("", top, "resources", "outputs")
		if v, ok := top.get("resources"); ok {
			if o, ok := f.object("resources", v); ok {
				t.resources, t.recorded = f.resources("resources", o)
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
		if t, _ := o.get("type"); !isString(t) {
			return false
		}
	}
	return true
}

// isString reports whether v is a string.
func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// recorded is what the decoder found in one resource of a template, so that the walks over every
// resource (link, Validate, rewriteAssets) need not walk its properties again: valid while Resources[i]
// is r and r.Properties is as Load left it.
type recorded struct {
	r *Resource
	// tokens are the tokens (AsToken) of r.Properties, in document order, as decoded: when assetHint is
	// set, rewriteAssets may have changed their strings since.
	tokens []Token
	// assetHint is set when a string of the resource contains assetSegmentPrefix: only then can a
	// property be an asset path.
	assetHint bool
}

// recordedAt returns what the decoder found in s.Resources[i], or false when it did not record it (a
// stack built otherwise, the flat layout, or resources changed since).
func (s *Stack) recordedAt(i int) (recorded, bool) {
	if i >= len(s.recorded) || s.recorded[i].r != s.Resources[i] {
		return recorded{}, false
	}
	return s.recorded[i], true
}

// resources reads the map of resources at path, sorted by logical ID, and what the decoder recorded of
// each (nil when it recorded none).
func (f *fields) resources(path string, o *object) ([]*Resource, []recorded) {
	all := make([]Resource, len(o.keys)) // one allocation for all
	recs := make([]recorded, len(o.keys))
	recordedAll := true
	for i, id := range o.keys {
		recs[i] = f.resource(&all[i], path, id, o.vals[i])
		if recs[i].r == nil {
			recordedAll = false
			recs[i].r = &all[i] // to be sorted with the others
		}
	}
	byID := func(a, b recorded) int { return strings.Compare(a.r.LogicalID, b.r.LogicalID) }
	if !slices.IsSortedFunc(recs, byID) {
		slices.SortFunc(recs, byID)
	}
	out := make([]*Resource, len(recs))
	for i := range recs {
		out[i] = recs[i].r
	}
	if !recordedAll {
		return out, nil
	}
	return out, recs
}

// resource reads one resource into r, and returns what the decoder recorded of it (r unset when nothing).
// It always fills r, with the fields that could be read.
func (f *fields) resource(r *Resource, parent, id string, v any) recorded {
	path := JoinPath(parent, id)
	*r = Resource{LogicalID: path[len(path)-len(id):], Path: path} // the ID shares the path's bytes
	f.id(path, "logical ID", id)                                   // reported; the resource is still read
	o, ok := v.(*object)
	if !ok {
		r.Properties = resource.Properties{}
		f.object(path, v)
		return recorded{r: r} // no properties, so neither tokens nor assets
	}
	f.unknownKeys(path, o, "type", "provider", "properties", "metadata", "dependsOn")
	r.Type = f.resourceType(path, o)
	if p, ok := o.get("provider"); ok {
		if s, ok := p.(string); ok && s != "" && printableASCII(s) {
			r.Provider = s // what f.name accepts without a word
		} else {
			r.Provider, _ = f.name(path+".provider", p)
		}
	} else {
		r.Provider, r.ProviderFromType = defaultProvider(r.Type), true
	}
	rec := recorded{r: r, tokens: o.tokens, assetHint: o.assetHint}
	if p, ok := o.get("properties"); ok {
		r.Properties, ok = f.plainObject(path, "properties", p)
		if !ok {
			rec.tokens = nil // none in the empty properties
		}
	}
	if r.Properties == nil {
		r.Properties = resource.Properties{}
	}
	if m, ok := o.get("metadata"); ok {
		r.Metadata, _ = f.plainObject(path, "metadata", m)
	}
	r.DependsOn = f.strings(path, o, "dependsOn")
	if !o.recorded {
		return recorded{}
	}
	return rec
}

// plainObject returns v, the value of key in the object at path, as a map, or reports that it is not an
// object.
func (f *fields) plainObject(path, key string, v any) (map[string]any, bool) {
	switch v := v.(type) {
	case map[string]any:
		return v, true
	case *object:
		return plain(v).(map[string]any), true
	}
	f.object(path+"."+key, v)
	return nil, false
}

// resourceType returns the resource's type, or the string as written when it is not of the shape
// Provider::Domain::Type (and reports it).
func (f *fields) resourceType(path string, o *object) string {
	v, ok := f.required(path, o, "type")
	if !ok {
		return ""
	}
	if t, ok := v.(string); ok && printableASCII(t) {
		if _, _, _, ok := resource.ParseType(t); ok {
			return t // what is checked below, without a word
		}
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
	for i, key := range o.keys {
		path := JoinPath("outputs", key)
		out[key] = &Output{Key: key, Path: path}
		f.id(path, "output key", key) // reported; the output is still read
		v, ok := f.object(path, o.vals[i])
		if !ok {
			continue
		}
		f.unknownKeys(path, v, "value", "description")
		value, _ := v.get("value")
		out[key].Value = plain(value)
		out[key].Description = f.optionalString(path, v, "description")
	}
	return out
}
