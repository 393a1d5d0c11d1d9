package state

import (
	"maps"
	"slices"
	"strconv"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// AppendJSON appends p's JSON encoding to b and returns the extended buffer: byte for byte what
// encoding/json's Marshal gives for p (fields in order, omitempty as tagged, object keys sorted, HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD, numbers as written), written directly
// instead of by reflection. A 100,000-resource plan is ~30 MB of JSON: Marshal spends ~0.25 s of CPU on it
// and keeps a buffer that size in its pool for the rest of the process. Values of types other than those
// decoded JSON holds (and resource.Unknown) are encoded by encoding/json. The error is encoding/json's, for
// a value it cannot encode (an invalid json.Number, a channel).
func (p *Plan) AppendJSON(b []byte) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"create":`...)
	b = strconv.AppendInt(b, int64(p.Create), 10)
	b = append(b, `,"update":`...)
	b = strconv.AppendInt(b, int64(p.Update), 10)
	b = append(b, `,"replace":`...)
	b = strconv.AppendInt(b, int64(p.Replace), 10)
	b = append(b, `,"delete":`...)
	b = strconv.AppendInt(b, int64(p.Delete), 10)
	b = append(b, `,"same":`...)
	b = strconv.AppendInt(b, int64(p.Same), 10)
	b = append(b, `,"steps":`...)
	if p.Steps == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Steps {
			if cap(b)-len(b) < 4<<10 {
				b = slices.Grow(b, max(cap(b), 64<<10)) // double: append alone grows a large buffer by a quarter
			}
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = p.Steps[i].appendJSON(b); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if p.SnapshotHash != "" {
		b = append(b, `,"snapshotHash":`...)
		b = resource.AppendJSONString(b, p.SnapshotHash)
	}
	if p.Values {
		b = append(b, `,"values":true`...)
	}
	if len(p.Reads) > 0 {
		b = append(b, `,"reads":{`...)
		for i, k := range slices.Sorted(maps.Keys(p.Reads)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = resource.AppendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, p.Reads[k], 10)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// JSON returns p's JSON encoding, AppendJSON's bytes, as a string of exactly their size (the buffer
// they were appended to, up to twice as large, is garbage at once). Errors are AppendJSON's.
func (p *Plan) JSON() (string, error) {
	b, err := p.AppendJSON(nil)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (s *PlanStep) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"resource":`...)
	b = resource.AppendJSONString(b, s.Resource)
	b = append(b, `,"stack":`...)
	b = resource.AppendJSONString(b, s.Stack)
	b = append(b, `,"logicalId":`...)
	b = resource.AppendJSONString(b, s.LogicalID)
	b = append(b, `,"type":`...)
	b = resource.AppendJSONString(b, s.Type)
	b = append(b, `,"op":`...)
	b = resource.AppendJSONString(b, s.Op)
	for _, f := range [...]struct{ key, v string }{{`,"physicalId":`, s.PhysicalID}, {`,"reason":`, s.Reason},
		{`,"replacement":`, s.Replacement}} {
		if f.v != "" {
			b = append(b, f.key...)
			b = resource.AppendJSONString(b, f.v)
		}
	}
	var err error
	if len(s.Changes) > 0 {
		b = append(b, `,"changes":[`...)
		for i, c := range s.Changes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = resource.AppendJSONString(b, c.Name)
			b = append(b, `,"old":`...)
			if b, err = resource.AppendJSON(b, c.Old); err != nil {
				return b, err
			}
			b = append(b, `,"new":`...)
			if b, err = resource.AppendJSON(b, c.New); err != nil {
				return b, err
			}
			if c.CreateOnly {
				b = append(b, `,"createOnly":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(s.Inputs) > 0 {
		b = append(b, `,"inputs":`...)
		if b, err = resource.AppendJSON(b, s.Inputs); err != nil {
			return b, err
		}
	}
	for _, f := range [...]struct {
		key string
		v   []string
	}{{`,"notes":`, s.Notes}, {`,"paths":`, s.Paths}} {
		if len(f.v) > 0 {
			b = append(b, f.key...)
			b = append(b, '[')
			for i, v := range f.v {
				if i > 0 {
					b = append(b, ',')
				}
				b = resource.AppendJSONString(b, v)
			}
			b = append(b, ']')
		}
	}
	if s.Digest != "" {
		b = append(b, `,"digest":`...)
		b = resource.AppendJSONString(b, s.Digest)
	}
	return append(b, '}'), nil
}
