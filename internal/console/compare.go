package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/operation/plantext"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// compareRow is one property of one resource in two deployments.
type compareRow struct {
	Path   string
	A, B   string
	InA    bool
	InB    bool
	Change bool
}

// compareResource is one resource of two deployments, side by side.
type compareResource struct {
	Resource string
	OnlyA    bool
	OnlyB    bool
	Changed  bool
	Rows     []compareRow
}

// flatten lists v's leaves by dotted path ("properties.ttl", "properties.records[0]"); an empty object or
// list is a leaf.
func flatten(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = x
		}
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = x
		}
		for i, e := range x {
			flatten(prefix+"["+strconv.Itoa(i)+"]", e, out)
		}
	default:
		out[prefix] = v
	}
}

func normalize(v any) any { // through JSON, so that maps of any kind compare as maps
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// compareResources sets two deployments' resources side by side, sorted by resource then path.
func compareResources(ra, rb map[string]any) []compareResource {
	keys := map[string]bool{}
	for k := range ra {
		keys[k] = true
	}
	for k := range rb {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]compareResource, 0, len(names))
	for _, name := range names {
		a, inA := ra[name]
		b, inB := rb[name]
		fa, fb := map[string]any{}, map[string]any{}
		if inA {
			flatten("", normalize(a), fa)
		}
		if inB {
			flatten("", normalize(b), fb)
		}
		paths := map[string]bool{}
		for p := range fa {
			paths[p] = true
		}
		for p := range fb {
			paths[p] = true
		}
		ps := make([]string, 0, len(paths))
		for p := range paths {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		cr := compareResource{Resource: name, OnlyA: !inB, OnlyB: !inA, Changed: !inA || !inB}
		for _, p := range ps {
			va, okA := fa[p]
			vb, okB := fb[p]
			row := compareRow{Path: p, InA: okA, InB: okB}
			if okA {
				row.A = plantext.Value(va)
			}
			if okB {
				row.B = plantext.Value(vb)
			}
			row.Change = okA != okB || row.A != row.B
			cr.Changed = cr.Changed || row.Change
			cr.Rows = append(cr.Rows, row)
		}
		out = append(out, cr)
	}
	return out
}

func (c *console) comparePage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	ctx, q := r.Context(), r.URL.Query()
	a, err := c.src.Deployment(ctx, s.caller, sc, q.Get("a"))
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	b, err := c.src.Deployment(ctx, s.caller, sc, q.Get("b"))
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	data := map[string]any{"Title": "Compare " + a.ID + " with " + b.ID, "A": a, "B": b,
		"HideIdentical": q.Get("hideIdentical") != "", "Filter": q.Get("resource"), "PathSearch": q.Get("path")}
	ra, ha, erra := resourcesOf(a)
	rb, hb, errb := resourcesOf(b)
	if erra != nil || errb != nil {
		data["Unavailable"] = true
		c.render(w, r, http.StatusOK, "compare", s, data)
		return
	}
	data["Sensitive"] = ha || hb
	all := compareResources(ra, rb)
	filter, search, hide := strings.ToLower(q.Get("resource")), strings.ToLower(q.Get("path")), q.Get("hideIdentical") != ""
	shown := all[:0:0]
	changed := 0
	for _, cr := range all {
		if cr.Changed {
			changed++
		}
		if filter != "" && !strings.Contains(strings.ToLower(cr.Resource), filter) {
			continue
		}
		if hide && !cr.Changed {
			continue
		}
		cr.Rows = slices.DeleteFunc(cr.Rows, func(row compareRow) bool {
			return (hide && !row.Change) || (search != "" && !strings.Contains(strings.ToLower(row.Path), search))
		})
		if search != "" && len(cr.Rows) == 0 {
			continue
		}
		shown = append(shown, cr)
	}
	data["Resources"], data["Total"], data["Changed"] = shown, len(all), changed
	c.render(w, r, http.StatusOK, "compare", s, data)
}

// resourcesOf is a deployment's resources from its snapshot (operation.SnapshotResources), sealed values
// hidden: the console holds no passphrase.
func resourcesOf(d *state.Deployment) (map[string]any, bool, error) {
	if len(d.Snapshot) == 0 {
		return nil, false, errNoSnapshot
	}
	return operation.SnapshotResources(d, "")
}

type constError string

func (e constError) Error() string { return string(e) }

const errNoSnapshot = constError("the deployment's snapshot is not available")
