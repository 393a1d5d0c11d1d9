package commitqueue

import (
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// appendResource appends the JSON of r, byte for byte what json.Marshal(r) returns, and reports whether
// it could: its values are written by resource.AppendJSON, and a resource with replaced objects, a value
// json.Marshal refuses or a time it writes otherwise (ok false) is left to json.Marshal whole. It is a
// third of the cost of json.Marshal, which reflects over every field and sorts every map's keys through
// reflect.Value.
func appendResource(buf []byte, r *state.Resource) (_ []byte, ok bool) {
	if len(r.Replaced) > 0 || !plainTime(r.UpdatedAt) || (r.Pending != nil && !plainTime(r.Pending.StartedAt)) {
		return buf, false
	}
	var err error
	buf = append(buf, `{"logicalId":`...)
	buf = resource.AppendJSONString(buf, r.LogicalID)
	buf = append(buf, `,"type":`...)
	buf = resource.AppendJSONString(buf, r.Type)
	buf = append(buf, `,"provider":`...)
	buf = resource.AppendJSONString(buf, r.Provider)
	if r.PhysicalID != "" {
		buf = append(buf, `,"physicalId":`...)
		buf = resource.AppendJSONString(buf, r.PhysicalID)
	}
	buf = append(buf, `,"inputs":`...)
	if buf, err = resource.AppendJSON(buf, r.Inputs); err != nil {
		return buf, false
	}
	buf = append(buf, `,"outputs":`...)
	if buf, err = resource.AppendJSON(buf, r.Outputs); err != nil {
		return buf, false
	}
	if len(r.Dependencies) > 0 {
		buf = append(buf, `,"dependencies":[`...)
		for i, d := range r.Dependencies {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = resource.AppendJSONString(buf, d)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"status":`...)
	buf = resource.AppendJSONString(buf, r.Status)
	if p := r.Pending; p != nil {
		buf = append(buf, `,"pending":{"op":`...)
		buf = resource.AppendJSONString(buf, string(p.Op))
		if len(p.Inputs) > 0 {
			buf = append(buf, `,"inputs":`...)
			if buf, err = resource.AppendJSON(buf, p.Inputs); err != nil {
				return buf, false
			}
		}
		if p.PhysicalID != "" {
			buf = append(buf, `,"physicalId":`...)
			buf = resource.AppendJSONString(buf, p.PhysicalID)
		}
		buf = append(buf, `,"startedAt":`...)
		buf = appendTime(buf, p.StartedAt)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"updatedAt":`...)
	buf = appendTime(buf, r.UpdatedAt)
	return append(buf, '}'), true
}

// plainTime reports whether json.Marshal writes t as appendTime does: its year has four digits.
func plainTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds, quoted).
func appendTime(buf []byte, t time.Time) []byte {
	buf = append(buf, '"')
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"')
}
