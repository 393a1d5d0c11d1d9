package operation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wI2L/jsondiff"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Change is one difference between two deployments' snapshots: a property of a resource
// ("properties.ttl", "properties.records[0]"), its "type", "provider" or "dependsOn", or the whole resource
// (Path "") when it is only in one of them (From or To is then nil).
type Change struct {
	// Resource is "Stack/LogicalID".
	Resource string `json:"resource"`
	Path     string `json:"path"`
	From     any    `json:"from"`
	To       any    `json:"to"`
}

// Compare returns the property-level differences between the snapshots of deployments a and b (with their
// snapshots, from GetDeployment), resource by resource, sorted by resource then path. Sealed values are
// compared opened when passphrase opens them, else shown as "(sensitive)" (a change of a sealed value is
// then not seen; sensitive reports whether any was hidden).
func Compare(a, b *state.Deployment, passphrase string) (changes []Change, sensitive bool, err error) {
	ra, ha, err := snapshotResources(a, passphrase)
	if err != nil {
		return nil, false, err
	}
	rb, hb, err := snapshotResources(b, passphrase)
	if err != nil {
		return nil, false, err
	}
	changes = []Change{}
	for _, k := range sortedKeys(ra, rb) {
		from, inA := ra[k]
		to, inB := rb[k]
		switch {
		case !inA:
			changes = append(changes, Change{Resource: k, To: to})
		case !inB:
			changes = append(changes, Change{Resource: k, From: from})
		default:
			ops, err := jsondiff.Compare(from, to, jsondiff.Invertible())
			if err != nil {
				return nil, false, fmt.Errorf("compare %s: %w", k, err)
			}
			for _, op := range ops {
				if op.Type == jsondiff.OperationTest {
					continue
				}
				c := Change{Resource: k, Path: dotted(op.Path)}
				if op.Type != jsondiff.OperationAdd {
					c.From = op.OldValue
				}
				if op.Type != jsondiff.OperationRemove {
					c.To = op.Value
				}
				changes = append(changes, c)
			}
		}
	}
	slices.SortStableFunc(changes, func(x, y Change) int {
		if c := strings.Compare(x.Resource, y.Resource); c != 0 {
			return c
		}
		return strings.Compare(x.Path, y.Path)
	})
	return changes, ha || hb, nil
}

// snapshotResources returns each resource of d's snapshot as {"type", "provider", "properties",
// "dependsOn"} by "Stack/LogicalID", and whether sealed values were hidden.
func snapshotResources(d *state.Deployment, passphrase string) (map[string]any, bool, error) {
	snap, err := DecodeSnapshot(d)
	if err != nil {
		return nil, false, err
	}
	hidden := false
	files, err := snap.Open(passphrase)
	if err != nil {
		if !snap.Sealed() && !snap.Redacted {
			return nil, false, err
		}
		shown, serr := snap.Shown()
		if serr != nil {
			return nil, false, serr
		}
		files, hidden = map[string][]byte{}, true
		for name, v := range shown {
			if files[name], err = json.Marshal(v); err != nil {
				return nil, false, err
			}
		}
	}
	a, ds := assembly.LoadFiles("snapshot of "+d.ID, files)
	if a == nil {
		return nil, false, fmt.Errorf("the snapshot of deployment %s does not load: %v", d.ID, ds)
	}
	out := map[string]any{}
	for _, s := range a.Stacks {
		for _, r := range s.Resources {
			v := map[string]any{"type": r.Type, "provider": r.Provider, "properties": map[string]any(r.Properties)}
			if len(r.DependsOn) > 0 {
				v["dependsOn"] = r.DependsOn
			}
			// Through JSON, so that jsondiff sees plain decoded values.
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, false, err
			}
			var plain any
			if err := json.Unmarshal(raw, &plain); err != nil {
				return nil, false, err
			}
			out[s.ID+"/"+r.LogicalID] = plain
		}
	}
	return out, hidden, nil
}

// dotted turns a JSON pointer (/properties/records/0) into the dotted form (properties.records[0]).
func dotted(pointer string) string {
	var b strings.Builder
	for i, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		if _, err := strconv.Atoi(seg); err == nil && i > 0 {
			b.WriteString("[" + seg + "]")
			continue
		}
		if i > 0 {
			b.WriteString(".")
		}
		b.WriteString(seg)
	}
	return b.String()
}

// SnapshotResources returns the resources of deployment d's snapshot (with its snapshot, from
// GetDeployment) by "Stack/LogicalID", each as Compare compares it: its "type", "provider", "properties"
// and "dependsOn". Sealed values are opened when passphrase opens them, else shown as "(sensitive)";
// sensitive reports whether any was hidden. The web console's side-by-side comparison reads it.
func SnapshotResources(d *state.Deployment, passphrase string) (resources map[string]any, sensitive bool, err error) {
	return snapshotResources(d, passphrase)
}
