package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// A cdkx stack is stored on the service as a Pulumi UntypedDeployment (version 3) laid out so that a
// change to k resources is k small byte-range edits:
//
//	{"version":3,"deployment":{"manifest":{…},"cdkx":HEADER,"resources":[
//	RESOURCE 1,
//	…
//	RESOURCE N
//	]}}
//
// HEADER holds the stack's own fields; each RESOURCE is one line, Pulumi-shaped (urn, custom, id, type,
// inputs, outputs, dependencies as URNs) with what only cdkx records under "cdkx". Lines are ordered by
// logical ID.
const (
	docPrefix    = `{"version":3,"deployment":{"manifest":{"time":"0001-01-01T00:00:00Z","magic":"","version":"cdkx"},"cdkx":`
	docResources = `,"resources":[`
	docSuffix    = "\n]}}"
	// documentFormat is the version of this layout, in the header.
	documentFormat = stateapi.DocumentFormat
)

// stackHeader is the "cdkx" object of a stored deployment; resourceLine is one stored resource and
// resourceExtra what it records beyond the Pulumi fields. They are the wire types the server checks a
// commit's result against (stateapi.DocumentHeader, stateapi.DocumentResource).
type (
	stackHeader   = stateapi.DocumentHeader
	resourceLine  = stateapi.DocumentResource
	resourceExtra = stateapi.DocumentResourceExtra
)

// document is a stack's stored text, kept as its parts.
type document struct {
	project, stack string
	// version is the stack's version this text is.
	version int64
	header  []byte
	ids     []string // sorted logical IDs
	lines   [][]byte // the JSON of each resource, without separators
	// whole is set when the service's text of this version is not text() (a stack never written, or
	// written by another client): the next commit sends its text whole rather than edits.
	whole bool
}

// edit is the text edit that replaces the bytes [start, end) of a document with text.
func edit(start, end int, text []byte) stateapi.TextEdit {
	return stateapi.TextEdit{Span: stateapi.TextSpan{Start: stateapi.TextPosition{Offset: start}, End: stateapi.TextPosition{Offset: end}}, NewText: string(text)}
}

// urn is the Pulumi URN of a cdkx resource: urn:pulumi:STACK::PROJECT::TYPE::LOGICALID, with the
// type's "::" separators written as ":" (Pulumi type tokens).
func urn(stack, project, typ, logicalID string) string {
	return "urn:pulumi:" + stack + "::" + project + "::" + pulumiType(typ) + "::" + logicalID
}

func pulumiType(typ string) string { return strings.ReplaceAll(typ, "::", ":") }

// encodeHeader returns the header JSON of s.
func encodeHeader(s *state.Stack) ([]byte, error) {
	h := stackHeader{Format: documentFormat, Stack: s.Name, Status: s.Status, Outputs: s.Outputs,
		Dependencies: s.Dependencies, UpdatedAt: s.UpdatedAt.UTC()}
	if h.Outputs == nil {
		h.Outputs = resource.Properties{}
	}
	return json.Marshal(h)
}

// encodeResource returns the line of r in stack.
func (d *document) encodeResource(r *state.Resource) ([]byte, error) {
	line := resourceLine{
		URN: urn(d.stack, d.project, r.Type, r.LogicalID), Custom: true, ID: r.PhysicalID, Type: pulumiType(r.Type),
		Inputs: r.Inputs, Outputs: r.Outputs,
		Cdkx: resourceExtra{LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, Dependencies: r.Dependencies,
			Status: r.Status, Pending: r.Pending, Replaced: r.Replaced, UpdatedAt: r.UpdatedAt},
	}
	if line.Inputs == nil {
		line.Inputs = resource.Properties{}
	}
	if line.Outputs == nil {
		line.Outputs = resource.Properties{}
	}
	for _, dep := range r.Dependencies {
		line.Dependencies = append(line.Dependencies, urn(d.stack, d.project, "", dep))
	}
	return json.Marshal(line)
}

// newDocument returns the document of an empty stack at version.
func newDocument(project, stack string, version int64) (*document, error) {
	d := &document{project: project, stack: stack, version: version, whole: true}
	h, err := encodeHeader(state.NewStack(stack))
	if err != nil {
		return nil, err
	}
	d.header = h
	return d, nil
}

// parseDocument reads a stored deployment of stack at version into a document and the stack state. A
// stack never written by cdkx (no resources, no "cdkx" header) is empty; a deployment another client
// wrote (resources without a "cdkx" header) is an error.
func parseDocument(project, stack string, version int64, data []byte) (*document, *state.Stack, error) {
	var ud struct {
		Version    int `json:"version"`
		Deployment struct {
			Cdkx      json.RawMessage   `json:"cdkx"`
			Resources []json.RawMessage `json:"resources"`
		} `json:"deployment"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&ud); err != nil {
		return nil, nil, fmt.Errorf("read stack %s version %d: the stored deployment is not valid JSON: %w", stack, version, err)
	}
	d, err := newDocument(project, stack, version)
	if err != nil {
		return nil, nil, err
	}
	st := state.NewStack(stack)
	st.Version = version
	if len(ud.Deployment.Cdkx) == 0 {
		if len(ud.Deployment.Resources) > 0 {
			return nil, nil, fmt.Errorf("read stack %s version %d: it holds %d resources written by another client (the Pulumi CLI?), not cdkx state; use another stack name",
				stack, version, len(ud.Deployment.Resources))
		}
		return d, st, nil
	}
	var h stackHeader
	if err := unmarshal(ud.Deployment.Cdkx, &h); err != nil {
		return nil, nil, fmt.Errorf("read stack %s version %d: header: %w", stack, version, err)
	}
	if h.Format != documentFormat {
		return nil, nil, fmt.Errorf("read stack %s version %d: stored in format %d, this cdkx reads format %d; upgrade cdkx", stack, version, h.Format, documentFormat)
	}
	st.Status, st.Outputs, st.Dependencies, st.UpdatedAt = h.Status, h.Outputs, h.Dependencies, h.UpdatedAt
	if st.Outputs == nil {
		st.Outputs = resource.Properties{}
	}
	d.header = compact(ud.Deployment.Cdkx)
	for i, raw := range ud.Deployment.Resources {
		var line resourceLine
		if err := unmarshal(raw, &line); err != nil {
			return nil, nil, fmt.Errorf("read stack %s version %d: resource %d: %w", stack, version, i, err)
		}
		x := line.Cdkx
		if x.LogicalID == "" {
			return nil, nil, fmt.Errorf("read stack %s version %d: resource %d (%s) has no cdkx logical ID", stack, version, i, line.URN)
		}
		st.Resources[x.LogicalID] = &state.Resource{LogicalID: x.LogicalID, Type: x.Type, Provider: x.Provider,
			PhysicalID: line.ID, Inputs: line.Inputs, Outputs: line.Outputs, Dependencies: x.Dependencies,
			Status: x.Status, Pending: x.Pending, Replaced: x.Replaced, UpdatedAt: x.UpdatedAt}
		d.ids = append(d.ids, x.LogicalID)
		d.lines = append(d.lines, compact(raw))
	}
	if !sort.StringsAreSorted(d.ids) {
		return nil, nil, fmt.Errorf("read stack %s version %d: resources are not ordered by logical ID", stack, version)
	}
	d.whole = !bytes.Equal(d.text(), data)
	return d, st, nil
}

func unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append([]byte(nil), raw...)
	}
	return b.Bytes()
}

// text returns the document's bytes.
func (d *document) text() []byte {
	n := len(docPrefix) + len(d.header) + len(docResources) + len(docSuffix)
	for _, l := range d.lines {
		n += len(l) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, docPrefix...)
	b = append(b, d.header...)
	b = append(b, docResources...)
	for i, l := range d.lines {
		b = append(b, separator(i)...)
		b = append(b, l...)
	}
	return append(b, docSuffix...)
}

// separator is what precedes resource line i.
func separator(i int) string {
	if i == 0 {
		return "\n"
	}
	return ",\n"
}

// pendingDocument is a document with changes applied, and the edits and hash that turn the text of the
// one it came from into its own.
type pendingDocument struct {
	next  *document
	edits []stateapi.TextEdit
	// whole is the new text, set instead of edits when the old document was whole.
	whole []byte
	hash  string
}

// apply returns d with changes applied (d itself is unchanged), the stack header stamped with now.
func (d *document) apply(changes []state.Change, now time.Time) (*pendingDocument, error) {
	// The stack header: the model is rebuilt from the current header, then the PutStack changes.
	var h stackHeader
	if err := unmarshal(d.header, &h); err != nil {
		return nil, fmt.Errorf("stack %s: header: %w", d.stack, err)
	}
	hs := state.NewStack(d.stack)
	hs.Status, hs.Outputs, hs.Dependencies = h.Status, h.Outputs, h.Dependencies
	changed := map[string][]byte{} // logical ID → new line; nil: deleted
	for _, c := range changes {
		switch c.Kind {
		case state.PutResource:
			line, err := d.encodeResource(c.Resource)
			if err != nil {
				return nil, fmt.Errorf("stack %s: encode resource %s: %w", d.stack, c.Resource.LogicalID, err)
			}
			changed[c.Resource.LogicalID] = line
		case state.DeleteResource:
			changed[c.LogicalID] = nil
		case state.PutStack:
			if err := hs.Apply(c); err != nil {
				return nil, err
			}
		}
	}
	hs.UpdatedAt = now
	header, err := encodeHeader(hs)
	if err != nil {
		return nil, err
	}
	next := &document{project: d.project, stack: d.stack, header: header}
	var edits []stateapi.TextEdit
	// The header span.
	hStart := len(docPrefix)
	edits = append(edits, edit(hStart, hStart+len(d.header), header))

	// Offsets of the old resource lines: line i spans [starts[i], starts[i+1]) with its separator.
	starts := make([]int, len(d.lines)+1)
	pos := hStart + len(d.header) + len(docResources)
	for i, l := range d.lines {
		starts[i] = pos
		pos += len(separator(i)) + len(l)
	}
	starts[len(d.lines)] = pos

	// Inserted IDs, sorted, merged with the old ones.
	var inserted []string
	for id, line := range changed {
		if line == nil {
			continue
		}
		if _, found := slices.BinarySearch(d.ids, id); !found {
			inserted = append(inserted, id)
		}
	}
	sort.Strings(inserted)
	emit := func(at int, id string, line []byte) {
		n := len(next.ids)
		next.ids, next.lines = append(next.ids, id), append(next.lines, line)
		edits = append(edits, edit(at, at, append([]byte(separator(n)), line...)))
	}
	oi, ii := 0, 0
	for oi < len(d.ids) || ii < len(inserted) {
		if ii < len(inserted) && (oi == len(d.ids) || inserted[ii] < d.ids[oi]) {
			emit(starts[oi], inserted[ii], changed[inserted[ii]])
			ii++
			continue
		}
		id, old := d.ids[oi], d.lines[oi]
		line, isChanged := changed[id]
		switch {
		case isChanged && line == nil: // deleted
			edits = append(edits, edit(starts[oi], starts[oi+1], nil))
		default:
			if !isChanged {
				line = old
			}
			n := len(next.ids)
			next.ids, next.lines = append(next.ids, id), append(next.lines, line)
			if isChanged && bytes.Equal(line, old) && (n == 0) == (oi == 0) {
				break // put of an identical resource at the same place
			}
			if isChanged || (n == 0) != (oi == 0) {
				edits = append(edits, edit(starts[oi], starts[oi+1], append([]byte(separator(n)), line...)))
			}
		}
		oi++
	}
	if d.whole {
		text := next.text()
		h := sha256.Sum256(text)
		return &pendingDocument{next: next, whole: text, hash: hex.EncodeToString(h[:])}, nil
	}
	sum := sha256.New()
	sum.Write([]byte(docPrefix))
	sum.Write(header)
	sum.Write([]byte(docResources))
	for i, l := range next.lines {
		sum.Write([]byte(separator(i)))
		sum.Write(l)
	}
	sum.Write([]byte(docSuffix))
	return &pendingDocument{next: next, edits: edits, hash: hex.EncodeToString(sum.Sum(nil))}, nil
}
