// Package integrity checks the deployment texts the state service stores against the rules their readers
// need (see Index), and edits them (edits.go: the text edits of delta checkpoints, applied one delta or a
// stored chain at a time, diffed and encoded for storage), without storage or HTTP: pure functions of
// bytes.
package integrity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Every write of state (checkpoint, checkpointverbatim, checkpointdelta, journalentries,
// import and the cdkx commit) checks the deployment it would store and refuses, with a 400 that names
// the byte offset and JSON path, one that its readers could not read back:
//   - an UntypedDeployment: a JSON object (no duplicate keys, matched as encoding/json matches them:
//     without regard to case) with "version" 3, or 4 except on import, and "deployment" an object;
//   - the deployment: "manifest" an object, "pending_operations" null or a list, "resources" null or a
//     list of objects, each with a non-empty string "urn" and a string "type" (non-empty in a cdkx
//     document), no two with the same URN unless all
//     or all but one are marked "delete" (the Pulumi engine's snapshot integrity rule);
//   - a cdkx document (the cdkx commit) also: a "cdkx" header of format stateapi.DocumentFormat, and
//     resources that decode as stateapi.DocumentResource with a "cdkx" logical ID, in strictly
//     increasing order of logical ID.
//
// Checking costs O(size of the change), not O(state), on the paths that edit (checkpointdelta, the cdkx
// commit): an Index of a text records the byte ranges of the resources list's elements and what the
// rules need of each (URN, delete mark, logical ID), and Index.Update re-reads only the elements an
// edit touches (and the text before or after the list when an edit falls there), shifting the others.

// Kind selects the rules a deployment is checked against.
type Kind int

const (
	// Pulumi is a Pulumi checkpoint: an UntypedDeployment of version 3 or 4.
	Pulumi Kind = iota
	// Import is a stack import: version 3 only.
	Import
	// Cdkx is a cdkx document (pkg/stateapi): a Pulumi checkpoint with the cdkx rules.
	Cdkx
)

// maxDepth bounds the nesting of JSON values, as encoding/json does.
const maxDepth = 10000

// Index is what the integrity rules need to know of a valid deployment text: the byte ranges of
// the elements of deployment.resources and, per element, its URN, delete mark and logical ID; the keys
// before and after the list. An Index is not safe for concurrent use.
type Index struct {
	kind Kind
	size int // bytes of the text
	// open is the offset just after the '[' of deployment.resources, or -1 when the deployment has no
	// resources list (then every change re-reads the whole text).
	open  int
	elems []docElem
	// live counts, by URN, the resources not marked delete; shared with the index update derives.
	live       map[string]int
	head, tail docPart
}

// docElem is one element of deployment.resources.
type docElem struct {
	start, end int // byte range of the value
	urn        string
	del        bool
	id         string // the cdkx logical ID (cdkx documents)
}

// docPart is what the text before the resources list (head) or after it (tail) holds.
type docPart struct {
	top, dep   []string // keys of the top-level object and of the deployment object
	version    int
	hasVersion bool
	header     bool // a "cdkx" header
}

// Kind returns the rules the index was checked against.
func (ix *Index) Kind() Kind { return ix.kind }

// Count returns the number of resources.
func (ix *Index) Count() int { return len(ix.elems) }

// Error is an integrity error: what is wrong, at which byte of the text, at which JSON path.
type Error struct {
	offset int
	path   string
	msg    string
}

func (e *Error) Error() string {
	if e.path == "" {
		return fmt.Sprintf("byte %d: %s", e.offset, e.msg)
	}
	return fmt.Sprintf("byte %d (%s): %s", e.offset, e.path, e.msg)
}

// Check reads text whole, checks it against the rules of kind and returns its index; an *Error saying
// what is wrong and where when it breaks one.
func Check(text []byte, kind Kind) (*Index, error) {
	return buildIndex(text, kind)
}

// Validate checks text against the rules of kind and returns its number of resources; an *Error when
// it breaks one.
func Validate(text []byte, kind Kind) (int, error) {
	ix, err := buildIndex(text, kind)
	if err != nil {
		return 0, err
	}
	return ix.Count(), nil
}

func buildIndex(text []byte, kind Kind) (*Index, error) {
	p := &docParser{text: text, limit: len(text), kind: kind}
	ix := &Index{kind: kind, size: len(text), live: map[string]int{}}
	var err error
	if ix.head, ix.open, err = p.head(); err != nil {
		return nil, err
	}
	if ix.open >= 0 {
		var closed bool
		if ix.elems, closed, err = p.elements(ix.open, false, 0); err != nil {
			return nil, err
		}
		if !closed {
			return nil, p.fail("the resources list is not closed")
		}
		if ix.tail, err = p.tailPart(); err != nil {
			return nil, err
		}
	}
	if err := ix.finish(); err != nil {
		return nil, err
	}
	for i, e := range ix.elems {
		if e.del {
			continue
		}
		if ix.live[e.urn]++; ix.live[e.urn] > 1 {
			return nil, &Error{e.start, fmt.Sprintf("deployment.resources[%d]", i), fmt.Sprintf("duplicate resource %s (not marked for deletion)", e.urn)}
		}
	}
	if kind == Cdkx {
		for i := 1; i < len(ix.elems); i++ {
			if err := ordered(ix.elems[i-1], ix.elems[i], i); err != nil {
				return nil, err
			}
		}
	}
	return ix, nil
}

// ordered checks that b (resource i) follows a in a cdkx document.
func ordered(a, b docElem, i int) error {
	if a.id < b.id {
		return nil
	}
	return &Error{b.start, fmt.Sprintf("deployment.resources[%d]", i),
		fmt.Sprintf("logical ID %q follows %q: resources must be in strictly increasing order of logical ID", b.id, a.id)}
}

// finish checks what the head and the tail hold together.
func (ix *Index) finish() error {
	h, t := &ix.head, &ix.tail
	for _, k := range t.top {
		if containsFold(h.top, k) {
			return &Error{ix.size, "", fmt.Sprintf("duplicate key %q", k)}
		}
	}
	for _, k := range t.dep {
		if containsFold(h.dep, k) {
			return &Error{ix.size, "deployment", fmt.Sprintf("duplicate key %q", k)}
		}
	}
	version, has := h.version, h.hasVersion
	if t.hasVersion {
		version, has = t.version, true
	}
	switch {
	case !has:
		return &Error{0, "version", "the deployment has no version"}
	case version == 3, version == 4 && ix.kind != Import:
	default:
		want := "3 or 4"
		if ix.kind == Import {
			want = "3"
		}
		return &Error{0, "version", fmt.Sprintf("deployment version %d is not supported; want %s", version, want)}
	}
	if !containsFold(h.top, "deployment") && !containsFold(t.top, "deployment") {
		return &Error{0, "deployment", "the deployment has no deployment object"}
	}
	if ix.kind == Cdkx && !h.header && !t.header {
		return &Error{0, "deployment.cdkx", "a cdkx document needs its cdkx header"}
	}
	return nil
}

func containsFold(keys []string, k string) bool {
	for _, x := range keys {
		if strings.EqualFold(x, k) {
			return true
		}
	}
	return false
}

// Update returns the index of next, the text edits (sorted by span, applied) turn ix's text into,
// checking only the parts of next the edits touch; an *Error when next breaks a rule. On success ix
// must no longer be used (the two share their URN counts); on error ix is unchanged.
func (ix *Index) Update(next []byte, edits []stateapi.TextEdit) (*Index, error) {
	if len(edits) == 0 && len(next) == ix.size {
		return ix, nil
	}
	if nx, ok := ix.incremental(next, edits); ok {
		return nx, nil
	}
	// Edits the index cannot follow (a text without a resources list, a change of its structure) and
	// invalid results: read the result whole, for a precise error or a fresh index.
	nx, err := buildIndex(next, ix.kind)
	if err != nil {
		return nil, err
	}
	ix.live = nil
	return nx, nil
}

// boundary returns the start of unit k of the text: unit 0 is the text before the resources list (up
// to its '['), units 1..n the elements (each with the separator before it), unit n+1 the text after the
// last element; boundary(n+2) is the text's end.
func (ix *Index) boundary(k int) int {
	switch {
	case k == 0:
		return 0
	case k == 1:
		return ix.open
	case k <= len(ix.elems)+1:
		return ix.elems[k-2].end
	}
	return ix.size
}

// unitOf returns the unit that holds byte x (x < size).
func (ix *Index) unitOf(x int) int {
	// The largest k in [0, n+1] with boundary(k) <= x.
	return sort.Search(len(ix.elems)+2, func(k int) bool { return ix.boundary(k) > x }) - 1
}

// run is a stretch of units [first, last] that edits touch, and the bytes its edits add.
type run struct {
	first, last int
	delta       int
}

// incremental is update for edits that leave the text's structure (one resources list) as it was and a
// valid result; ok is false otherwise.
func (ix *Index) incremental(next []byte, edits []stateapi.TextEdit) (*Index, bool) {
	if ix.open < 0 || ix.size == 0 {
		return nil, false
	}
	n := len(ix.elems)
	sUnit := n + 1
	// The units each edit touches, with one more on each side (so that no edit lies on a run's
	// boundary), merged into runs.
	var runs []run
	for _, e := range edits {
		st, en := e.Span.Start.Offset, e.Span.End.Offset
		k1, k2 := ix.unitOf(max(st-1, 0)), ix.unitOf(min(en, ix.size-1))
		d := len(e.NewText) - (en - st)
		if l := len(runs) - 1; l >= 0 && k1 <= runs[l].last+1 {
			runs[l].last = max(runs[l].last, k2)
			runs[l].delta += d
			continue
		}
		runs = append(runs, run{k1, k2, d})
	}
	nx := &Index{kind: ix.kind, size: len(next), open: ix.open, live: ix.live, head: ix.head, tail: ix.tail}
	nx.elems = make([]docElem, 0, n+8)
	urnDelta := map[string]int{}
	var added []docElem
	shift, unit := 0, 1           // unit: the next element unit not yet copied
	copyClean := func(upTo int) { // copies the element units [unit, upTo) shifted
		for ; unit < upTo && unit <= n; unit++ {
			e := ix.elems[unit-1]
			e.start, e.end = e.start+shift, e.end+shift
			nx.elems = append(nx.elems, e)
		}
	}
	for _, r := range runs {
		copyClean(r.first)
		lo, hi := ix.boundary(r.first)+shift, ix.boundary(r.last+1)+shift+r.delta
		p := &docParser{text: next, pos: lo, limit: len(next), kind: ix.kind}
		afterElem := r.first > 1
		if r.first == 0 {
			head, open, err := p.head()
			if err != nil || open < 0 {
				return nil, false
			}
			nx.head, nx.open, afterElem = head, open, false
		}
		if r.last < sUnit {
			p.limit = hi
		}
		elems, closed, err := p.elements(p.pos, afterElem, len(nx.elems))
		if err != nil {
			return nil, false
		}
		if closed != (r.last == sUnit) {
			return nil, false
		}
		if closed {
			if nx.tail, err = p.tailPart(); err != nil {
				return nil, false
			}
		} else {
			// The run must end where the clean unit after it expects: after an element when that unit
			// is an element with its ',' separator, just after the '[' when it is the first element.
			endsAfterElem := len(elems) > 0 || afterElem
			if p.pos != hi || (r.last+1 >= 2 && r.last+1 <= n && !endsAfterElem) || (r.last+1 == 1 && endsAfterElem) {
				return nil, false
			}
		}
		for u := max(r.first, 1); u <= min(r.last, n); u++ {
			if e := ix.elems[u-1]; !e.del {
				urnDelta[e.urn]--
			}
		}
		for _, e := range elems {
			if !e.del {
				urnDelta[e.urn]++
			}
		}
		added = append(added, elems...)
		// The cdkx order, at the run's edges: with the element before it and the one after it.
		if ix.kind == Cdkx {
			all := elems
			if len(nx.elems) > 0 {
				all = append([]docElem{nx.elems[len(nx.elems)-1]}, all...)
			}
			if r.last+1 <= n {
				all = append(all, ix.elems[r.last])
			}
			for i := 1; i < len(all); i++ {
				if ordered(all[i-1], all[i], 0) != nil {
					return nil, false
				}
			}
		}
		nx.elems = append(nx.elems, elems...)
		shift += r.delta
		unit = max(unit, r.last+1)
	}
	copyClean(n + 1)
	if shift != len(next)-ix.size {
		return nil, false
	}
	if nx.finish() != nil {
		return nil, false
	}
	for _, e := range added {
		if !e.del && ix.live[e.urn]+urnDelta[e.urn] > 1 {
			return nil, false
		}
	}
	// Checked: the counts move to the new index.
	for urn, d := range urnDelta {
		if c := ix.live[urn] + d; c > 0 {
			ix.live[urn] = c
		} else {
			delete(ix.live, urn)
		}
	}
	ix.live = nil
	return nx, true
}

// docParser reads a deployment text: JSON, checked as it goes, with the rules of its kind.
type docParser struct {
	text  []byte
	pos   int
	limit int // the parser reads no further
	kind  Kind
	path  string // where it is, for errors
	tail  bool   // reading the text after the resources list
}

func (p *docParser) fail(format string, args ...any) error {
	return &Error{p.pos, p.path, fmt.Sprintf(format, args...)}
}

func (p *docParser) ws() {
	for p.pos < p.limit {
		switch p.text[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the limit.
func (p *docParser) peek() byte {
	p.ws()
	if p.pos >= p.limit {
		return 0
	}
	return p.text[p.pos]
}

func (p *docParser) expect(c byte) error {
	if p.peek() != c {
		return p.unexpected(fmt.Sprintf("%q", c))
	}
	p.pos++
	return nil
}

func (p *docParser) unexpected(want string) error {
	if p.pos >= p.limit {
		return p.fail("unexpected end of the text, want %s", want)
	}
	return p.fail("unexpected %q, want %s", p.text[p.pos], want)
}

// head reads, from the text's start, the top-level object up to the '[' of deployment.resources and
// returns what it holds and the offset after that '['; -1 and the whole text read when there is no such
// list.
func (p *docParser) head() (docPart, int, error) {
	var part docPart
	if err := p.expect('{'); err != nil {
		return part, 0, err
	}
	stop, err := p.members(0, &part, false)
	if err != nil || stop {
		return part, p.pos, err
	}
	if p.ws(); p.pos != p.limit {
		return part, 0, p.fail("data after the deployment")
	}
	return part, -1, nil
}

// tailPart reads, from just after the resources list's ']', the rest of the deployment object and of
// the top-level object, up to the text's end.
func (p *docParser) tailPart() (docPart, error) {
	var part docPart
	p.path, p.tail = "deployment", true
	if _, err := p.members(1, &part, true); err != nil {
		return part, err
	}
	p.path = ""
	if _, err := p.members(0, &part, true); err != nil {
		return part, err
	}
	if p.ws(); p.pos != p.limit {
		return part, p.fail("data after the deployment")
	}
	return part, nil
}

// members reads the members of the top-level object (level 0) or of the deployment (level 1), after
// its '{' or, resuming, after a member, up to and with its '}'. It stops, with stop set, just after the
// '[' of deployment.resources.
func (p *docParser) members(level int, part *docPart, resume bool) (stop bool, err error) {
	keys := &part.top
	prefix := ""
	if level == 1 {
		keys, prefix = &part.dep, "deployment."
	}
	if resume {
		if p.peek() == '}' {
			p.pos++
			return false, nil
		}
		if err := p.expect(','); err != nil {
			return false, err
		}
	} else if p.peek() == '}' {
		p.pos++
		return false, nil
	}
	for {
		if p.peek() != '"' {
			return false, p.unexpected("a key")
		}
		at := p.pos
		key, err := p.key()
		if err != nil {
			return false, err
		}
		if containsFold(*keys, key) {
			return false, &Error{at, strings.TrimSuffix(prefix, "."), fmt.Sprintf("duplicate key %q", key)}
		}
		*keys = append(*keys, key)
		if err := p.expect(':'); err != nil {
			return false, err
		}
		p.path = prefix + key
		c := p.peek()
		switch {
		case level == 0 && strings.EqualFold(key, "deployment"):
			if c != '{' {
				return false, p.fail("the deployment is not a JSON object")
			}
			p.pos++
			stop, err := p.members(1, part, false)
			if err != nil || stop {
				return stop, err
			}
		case level == 0 && strings.EqualFold(key, "version"):
			start := p.pos
			if err := p.value(0); err != nil {
				return false, err
			}
			v, err := strconv.Atoi(string(p.text[start:p.pos]))
			if err != nil {
				return false, &Error{start, "version", "the version is not an integer"}
			}
			part.version, part.hasVersion = v, true
		case level == 0 && strings.EqualFold(key, "features"):
			var f []string
			if err := p.decodeValue(&f); err != nil {
				return false, err
			}
		case level == 1 && strings.EqualFold(key, "resources") && p.tail:
			// The head held the list already.
			return false, &Error{at, "deployment", fmt.Sprintf("duplicate key %q", key)}
		case level == 1 && strings.EqualFold(key, "resources"):
			if c == '[' {
				p.pos++
				p.path = "deployment.resources"
				return true, nil
			}
			if err := p.null("the resources are not a list"); err != nil {
				return false, err
			}
		case level == 1 && strings.EqualFold(key, "manifest"):
			if c != '{' {
				return false, p.fail("the manifest is not a JSON object")
			}
			if err := p.value(0); err != nil {
				return false, err
			}
		case level == 1 && strings.EqualFold(key, "pending_operations"):
			if c != '[' {
				if err := p.null("pending_operations is not a list"); err != nil {
					return false, err
				}
				break
			}
			if err := p.value(0); err != nil {
				return false, err
			}
		case level == 1 && strings.EqualFold(key, "cdkx") && p.kind == Cdkx:
			var h stateapi.DocumentHeader
			if err := p.decodeValue(&h); err != nil {
				return false, err
			}
			if h.Format != stateapi.DocumentFormat {
				return false, p.fail("cdkx document format %d; this server reads format %d", h.Format, stateapi.DocumentFormat)
			}
			part.header = true
		default:
			if err := p.value(0); err != nil {
				return false, err
			}
		}
		p.path = strings.TrimSuffix(prefix, ".")
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return false, nil
		default:
			return false, p.unexpected(`"," or "}"`)
		}
	}
}

// null reads a null, or fails with msg.
func (p *docParser) null(msg string) error {
	if p.pos+4 <= p.limit && string(p.text[p.pos:p.pos+4]) == "null" {
		p.pos += 4
		return nil
	}
	return p.fail("%s", msg)
}

// decodeValue reads a value and decodes it into v as encoding/json would (numbers as json.Number).
func (p *docParser) decodeValue(v any) error {
	start := p.pos
	if err := p.value(0); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(p.text[start:p.pos]))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return &Error{start, p.path, err.Error()}
	}
	return nil
}

// elements reads the elements of the resources list from at: after its '[' (afterElem false) or after
// an element. It stops at the list's ']' (closed, the parser after it), or, when bounded by the
// parser's limit, at the limit after an element or its separator. first is the index of the first
// element read, for errors.
func (p *docParser) elements(at int, afterElem bool, first int) ([]docElem, bool, error) {
	p.pos = at
	var elems []docElem
	for {
		c := p.peek()
		if p.pos >= p.limit {
			return elems, false, nil
		}
		if c == ']' {
			p.pos++
			return elems, true, nil
		}
		if afterElem {
			if c != ',' {
				return nil, false, p.unexpected(`"," or "]"`)
			}
			p.pos++
			p.ws()
		}
		i := first + len(elems)
		p.path = fmt.Sprintf("deployment.resources[%d]", i)
		e, err := p.resource()
		if err != nil {
			return nil, false, err
		}
		elems = append(elems, e)
		afterElem = true
	}
}

// resource reads one element of the resources list.
func (p *docParser) resource() (docElem, error) {
	start := p.pos
	if p.peek() != '{' {
		return docElem{}, p.unexpected("a resource object")
	}
	if err := p.value(0); err != nil {
		return docElem{}, err
	}
	e := docElem{start: start, end: p.pos}
	raw := p.text[start:p.pos]
	if p.kind == Cdkx {
		var r stateapi.DocumentResource
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			return e, &Error{start, p.path, err.Error()}
		}
		if r.Cdkx.LogicalID == "" {
			return e, &Error{start, p.path, "the resource has no cdkx logical ID"}
		}
		e.urn, e.id = r.URN, r.Cdkx.LogicalID
		if r.Type == "" {
			return e, &Error{start, p.path, "the resource has no type"}
		}
	} else {
		var r struct {
			URN    *string `json:"urn"`
			Type   *string `json:"type"`
			Delete bool    `json:"delete"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return e, &Error{start, p.path, err.Error()}
		}
		// Pulumi's own test snapshots have resources of type "": a Pulumi checkpoint needs the field.
		if r.Type == nil {
			return e, &Error{start, p.path, "the resource has no type"}
		}
		if r.URN != nil {
			e.urn = *r.URN
		}
		e.del = r.Delete
	}
	if e.urn == "" {
		return e, &Error{start, p.path, "the resource has no urn"}
	}
	return e, nil
}

// key reads an object key (a string) and returns it unquoted.
func (p *docParser) key() (string, error) {
	start := p.pos
	if err := p.str(); err != nil {
		return "", err
	}
	raw := p.text[start+1 : p.pos-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), nil
	}
	var s string
	if err := json.Unmarshal(p.text[start:p.pos], &s); err != nil {
		return "", &Error{start, p.path, err.Error()}
	}
	return s, nil
}

// value reads one JSON value, checking its syntax.
func (p *docParser) value(depth int) error {
	if depth > maxDepth {
		return p.fail("values nested more than %d deep", maxDepth)
	}
	switch c := p.peek(); {
	case c == '{':
		p.pos++
		if p.peek() == '}' {
			p.pos++
			return nil
		}
		for {
			if p.peek() != '"' {
				return p.unexpected("a key")
			}
			if err := p.str(); err != nil {
				return err
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			if err := p.value(depth + 1); err != nil {
				return err
			}
			switch p.peek() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				return nil
			default:
				return p.unexpected(`"," or "}"`)
			}
		}
	case c == '[':
		p.pos++
		if p.peek() == ']' {
			p.pos++
			return nil
		}
		for {
			if err := p.value(depth + 1); err != nil {
				return err
			}
			switch p.peek() {
			case ',':
				p.pos++
			case ']':
				p.pos++
				return nil
			default:
				return p.unexpected(`"," or "]"`)
			}
		}
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.unexpected("a JSON value")
}

func (p *docParser) literal(lit string) error {
	if p.pos+len(lit) <= p.limit && string(p.text[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return nil
	}
	return p.fail("invalid literal, want %s", lit)
}

// str reads a string, p at its opening quote.
func (p *docParser) str() error {
	p.pos++
	for p.pos < p.limit {
		c := p.text[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c == '\\':
			if p.pos+1 >= p.limit {
				return p.fail("unterminated string")
			}
			switch p.text[p.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > p.limit {
					return p.fail("unterminated string")
				}
				for _, h := range p.text[p.pos+2 : p.pos+6] {
					if !isHex(h) {
						return p.fail("invalid \\u escape")
					}
				}
				p.pos += 6
			default:
				return p.fail("invalid escape \\%c", p.text[p.pos+1])
			}
		case c < 0x20:
			return p.fail("control character in a string")
		default:
			p.pos++
		}
	}
	return p.fail("unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (p *docParser) number() error {
	digits := func() int {
		n := 0
		for p.pos < p.limit && p.text[p.pos] >= '0' && p.text[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.text[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < p.limit && p.text[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return p.fail("invalid number")
	}
	if p.pos < p.limit && p.text[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	if p.pos < p.limit && (p.text[p.pos] == 'e' || p.text[p.pos] == 'E') {
		p.pos++
		if p.pos < p.limit && (p.text[p.pos] == '+' || p.text[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	return nil
}
