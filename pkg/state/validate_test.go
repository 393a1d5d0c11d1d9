package state_test

import (
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := func() *state.Resource {
		return &state.Resource{LogicalID: "A", Type: "T::T::T", Provider: "p", PhysicalID: "a", Outputs: resource.Properties{"crn": "x"}}
	}
	tests := []struct {
		name   string
		change func(r *state.Resource)
		want   string
	}{
		{"valid", func(*state.Resource) {}, ""},
		{"pending", func(r *state.Resource) { r.Pending = &state.PendingOperation{Op: "creating"} }, `operation "creating" still pending`},
		{"record of nothing", func(r *state.Resource) { r.PhysicalID = "" }, "a record of nothing"},
		{"replaced only", func(r *state.Resource) { r.PhysicalID, r.Replaced = "", []state.Object{{PhysicalID: "old"}} }, ""},
		{"no crn", func(r *state.Resource) { r.Outputs = nil }, "without a crn output"},
		{"dangling dependency", func(r *state.Resource) { r.Dependencies = []string{"Gone"} }, "depends on Gone"},
		{"no type", func(r *state.Resource) { r.Type = "" }, "no type or provider"},
	}
	for _, tt := range tests {
		st := state.NewStack("S")
		r := ok()
		tt.change(r)
		st.Resources["A"] = r
		err := st.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
