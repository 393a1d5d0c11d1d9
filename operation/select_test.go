package operation_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/operation"
)

func TestSelectStacks(t *testing.T) {
	t.Parallel()
	a := &assembly.Assembly{Stacks: []*assembly.Stack{
		{ID: "App", Dependencies: []string{"Zones", "Data"}}, {ID: "Zones"}, {ID: "Data", Dependencies: []string{"Zones"}}, {ID: "Other"},
	}}
	tests := []struct {
		names   []string
		excl    bool
		want    []string
		wantErr string
	}{
		{names: nil, want: []string{"Zones", "Data", "App", "Other"}},
		{names: []string{"App"}, want: []string{"Zones", "Data", "App"}},
		{names: []string{"App"}, excl: true, want: []string{"App"}},
		{names: []string{"Data", "Other"}, want: []string{"Zones", "Data", "Other"}},
		{names: []string{"Zone"}, wantErr: `no stack "Zone" in the assembly; did you mean "Zones"? (stacks: Zones, Data, App, Other)`},
	}
	for _, tt := range tests {
		got, err := operation.SelectStacks(a, tt.names, tt.excl)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("SelectStacks(%q) error = %v, want %q", tt.names, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SelectStacks(%q): %v", tt.names, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SelectStacks(%q, %t) (-want +got):\n%s", tt.names, tt.excl, diff)
		}
	}
}
