package diag

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSeverityJSON(t *testing.T) {
	t.Parallel()
	ds := Diagnostics{{Severity: Error, Summary: "a"}, {Severity: Warning, Summary: "b"}}
	b, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"severity":"error","summary":"a"},{"severity":"warning","summary":"b"}]`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("json.Marshal() (-want +got):\n%s", diff)
	}
	var back Diagnostics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ds, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`[{"severity":"fatal"}]`), &back); err == nil {
		t.Error(`json.Unmarshal() of severity "fatal" = nil error, want one`)
	}
}
