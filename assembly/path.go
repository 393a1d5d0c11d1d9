package assembly

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPathLen is about the longest JSON path Load, FindTokens and Resolve render, in bytes. A longer path
// (a value nested hundreds of levels deep, or under a huge key) keeps its beginning and its end around
// "…": rendering it for each of a million tokens must not cost a million times its length.
const MaxPathLen = 256

// jsonPath is the JSON path of the value being walked: a prefix, then one segment per level below it. It
// is rendered only on demand (String): walking n levels costs O(n), where joining the path at every level
// cost O(n²) in time and bytes.
type jsonPath struct {
	prefix string
	segs   []segment
	ends   []int // ends[i] is the rendered length of prefix and segs[:i+1]
}

// segment is an object key, or a list index when isKey is false.
type segment struct {
	key   string
	index int
	isKey bool
}

// pushKey descends into the value of key.
func (p *jsonPath) pushKey(key string) {
	n := p.len()
	if n > 0 {
		n++ // the dot
	}
	p.segs = append(p.segs, segment{key: key, isKey: true})
	p.ends = append(p.ends, n+len(key))
}

// reset makes p the empty path under prefix, keeping its buffers: one jsonPath walks every resource of a
// template without growing its segments anew for each (100,000 resources allocated 49 MB that way).
func (p *jsonPath) reset(prefix string) {
	p.prefix, p.segs, p.ends = prefix, p.segs[:0], p.ends[:0]
}

// pushIndex descends into the element at index i of a list.
func (p *jsonPath) pushIndex(i int) {
	p.segs = append(p.segs, segment{index: i})
	p.ends = append(p.ends, p.len()+2+len(strconv.Itoa(i)))
}

// pop returns to the parent.
func (p *jsonPath) pop() {
	p.segs = p.segs[:len(p.segs)-1]
	p.ends = p.ends[:len(p.ends)-1]
}

// len is the rendered length of the whole path.
func (p *jsonPath) len() int {
	if len(p.ends) == 0 {
		return len(p.prefix)
	}
	return p.ends[len(p.ends)-1]
}

// piece renders segment i as it follows the path before it: sep is "." (or "" after an empty path) and
// body the key, or sep is "" and body "[i]".
func (p *jsonPath) piece(i int) (sep, body string) {
	s := p.segs[i]
	if !s.isKey {
		return "", "[" + strconv.Itoa(s.index) + "]"
	}
	before := len(p.prefix)
	if i > 0 {
		before = p.ends[i-1]
	}
	if before == 0 {
		return "", s.key
	}
	return ".", s.key
}

// String renders the path as JoinPath and "[i]" would, such as "resources.X.properties.records[0]". A
// path longer than MaxPathLen keeps its first and last MaxPathLen/2 bytes or so, joined by "…"; the cost
// is O(MaxPathLen) however deep the path is and however long its keys.
func (p *jsonPath) String() string {
	var b strings.Builder
	if total := p.len(); total <= MaxPathLen {
		b.Grow(total)
		b.WriteString(p.prefix)
		for i := range p.segs {
			sep, body := p.piece(i)
			b.WriteString(sep)
			b.WriteString(body)
		}
		return b.String()
	}
	half := MaxPathLen / 2
	b.Grow(MaxPathLen + len("…"))
	// The beginning: the prefix and the first segments, up to half bytes.
	write := func(s string) { b.WriteString(s[:min(len(s), half-b.Len())]) }
	write(p.prefix)
	for i := 0; i < len(p.segs) && b.Len() < half; i++ {
		sep, body := p.piece(i)
		write(sep)
		write(body)
	}
	head := b.String()
	if i := lastRuneStart(head); i >= 0 && !utf8.FullRuneInString(head[i:]) {
		head = head[:i] // a rune cut in two
	}
	// The end: the last half bytes of the last segments (and of the prefix when they are shorter).
	var parts []string // in reverse order
	n := 0
	for i := len(p.segs) - 1; i >= 0 && n < half; i-- {
		sep, body := p.piece(i)
		parts = append(parts, body, sep)
		n += len(sep) + len(body)
	}
	if n < half {
		parts = append(parts, p.prefix)
		n += len(p.prefix)
	}
	b.Reset()
	skip := n - half
	for i := len(parts) - 1; i >= 0; i-- {
		s := parts[i]
		if skip >= len(s) {
			skip -= len(s)
			continue
		}
		b.WriteString(s[max(skip, 0):])
		skip = 0
	}
	tail := b.String()
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:] // a rune cut in two
	}
	return head + "…" + tail
}

// lastRuneStart returns the index of the start of the last rune of s, looking at most utf8.UTFMax bytes
// back, or -1.
func lastRuneStart(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return -1
}
