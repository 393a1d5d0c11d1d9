package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// nanos encodes t as Unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos decodes Unix nanoseconds to a UTC time; 0 is the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// decodeJSON decodes data into v, keeping numbers as json.Number as pkg/resource requires.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// encodeDependencies encodes a stack's dependencies; nil and empty are "[]".
func encodeDependencies(deps []string) (string, error) {
	if len(deps) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(deps)
	return string(b), err
}

// encodedChange is a change with its row values encoded before any transaction starts.
type encodedChange struct {
	kind      state.ChangeKind
	logicalID string
	// data is the resource JSON (PutResource) or the outputs JSON (PutStack).
	data, deps string
	status     string
}

// encodeChanges encodes each change's row values, and the journal entry of all of them: the JSON of
// changes as a []state.Change. The JSON of a resource is encoded once and used for both. The journal
// bytes are those of the SQLite backend, so that either backend can replay the other's journal.
func encodeChanges(changes []state.Change) ([]encodedChange, string, error) {
	enc := make([]encodedChange, len(changes))
	var journal strings.Builder
	journal.WriteByte('[')
	for i, c := range changes {
		if i > 0 {
			journal.WriteByte(',')
		}
		e := encodedChange{kind: c.Kind, logicalID: c.LogicalID, status: c.Status}
		var plain bool // the journal entry can be built around the resource's JSON
		switch c.Kind {
		case state.PutResource:
			data, err := json.Marshal(c.Resource)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode resource %q: %w", i, c.Resource.LogicalID, err)
			}
			e.logicalID, e.data = c.Resource.LogicalID, string(data)
			plain = c.LogicalID == "" && c.Status == "" && len(c.Outputs) == 0 && len(c.Dependencies) == 0
			if plain {
				// What json.Marshal(c) returns when only Kind and Resource are set.
				journal.WriteString(`{"kind":"put","resource":`)
				journal.WriteString(e.data)
				journal.WriteByte('}')
			}
		case state.PutStack:
			outputs := c.Outputs
			if outputs == nil {
				outputs = resource.Properties{}
			}
			data, err := json.Marshal(outputs)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode stack outputs: %w", i, err)
			}
			e.data = string(data)
			if e.deps, err = encodeDependencies(c.Dependencies); err != nil {
				return nil, "", fmt.Errorf("change %d: encode stack dependencies: %w", i, err)
			}
		}
		if !plain {
			data, err := json.Marshal(c)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode: %w", i, err)
			}
			journal.Write(data)
		}
		enc[i] = e
	}
	journal.WriteByte(']')
	return enc, journal.String(), nil
}
