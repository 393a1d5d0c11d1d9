package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestStatusTable pins every operation's statuses and how each status is classified, so that a new
// operation or status cannot be added to one half of the table only.
func TestStatusTable(t *testing.T) {
	t.Parallel()
	want := map[operation]statusSet{
		opCreate:         {"CREATE_IN_PROGRESS", "CREATE_COMPLETE", "CREATE_FAILED"},
		opUpdate:         {"UPDATE_IN_PROGRESS", "UPDATE_COMPLETE", "UPDATE_FAILED"},
		opDelete:         {"DELETE_IN_PROGRESS", "DELETE_COMPLETE", "DELETE_FAILED"},
		opUpdateRollback: {"UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE", "UPDATE_ROLLBACK_FAILED"},
		opRollback:       {"ROLLBACK_IN_PROGRESS", "ROLLBACK_COMPLETE", "ROLLBACK_FAILED"},
		opImport:         {"", "IMPORT_COMPLETE", "IMPORT_FAILED"},
	}
	got := map[operation]statusSet{}
	for op := range operation(len(statusTable)) {
		got[op] = op.statuses()
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(statusSet{})); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	rollbacks := map[operation]operation{}
	for _, op := range []operation{opCreate, opUpdate} {
		rollbacks[op] = op.rollback()
	}
	if diff := cmp.Diff(map[operation]operation{opCreate: opRollback, opUpdate: opUpdateRollback}, rollbacks); diff != "" {
		t.Errorf("rollback (-want +got):\n%s", diff)
	}

	type class struct{ InProgress, Complete, Failed bool }
	classes := map[Status]class{}
	for _, s := range []Status{CreateInProgress, CreateComplete, CreateFailed, UpdateInProgress, UpdateComplete,
		UpdateFailed, UpdateCompleteCleanup, DeleteInProgress, DeleteComplete, DeleteFailed, NoChanges, Skipped,
		UpdateRollbackInProgress, UpdateRollbackComplete, UpdateRollbackFailed, RollbackInProgress,
		RollbackComplete, RollbackFailed, ImportComplete, ImportFailed, "", "SOMETHING_ELSE"} {
		classes[s] = class{s.InProgress(), s.Complete(), s.Failed()}
	}
	running, done, failed := class{InProgress: true}, class{Complete: true}, class{Failed: true}
	wantClasses := map[Status]class{
		CreateInProgress: running, CreateComplete: done, CreateFailed: failed,
		UpdateInProgress: running, UpdateComplete: done, UpdateFailed: failed, UpdateCompleteCleanup: running,
		DeleteInProgress: running, DeleteComplete: done, DeleteFailed: failed,
		NoChanges: {}, Skipped: {},
		UpdateRollbackInProgress: running, UpdateRollbackComplete: done, UpdateRollbackFailed: failed,
		RollbackInProgress: running, RollbackComplete: done, RollbackFailed: failed,
		ImportComplete: done, ImportFailed: failed,
		"": {}, "SOMETHING_ELSE": {},
	}
	if diff := cmp.Diff(wantClasses, classes); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
}

// TestStepConstructors checks that each step constructor fills the subject from what the step works on
// and reports the first invariant it breaks.
func TestStepConstructors(t *testing.T) {
	t.Parallel()
	live := &state.Resource{LogicalID: "A", Type: "T", Provider: "p", PhysicalID: "a-1"}
	fresh := &state.Resource{LogicalID: "A", Type: "T", Provider: "p"}
	interrupted := &state.Resource{LogicalID: "A", Type: "T", Provider: "p",
		Pending: &state.PendingOperation{Op: state.PendingCreate}}
	noProvider := &state.Resource{LogicalID: "A", Type: "T", PhysicalID: "a-1"}
	old := state.Object{Type: "OldT", Provider: "q", PhysicalID: "a-0"}
	tr := turn{serial: []string{"k"}, rank: 3}
	ph := phaseOf(opUpdate)
	tests := []struct {
		name    string
		step    step
		want    subject
		invalid string
	}{
		{"create", newCreateStep("S", ph, fresh, nil, nil, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr}, ""},
		{"create of a record with an object", newCreateStep("S", ph, live, nil, nil, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr},
			"engine: create step of S/A: the new record already has a physical ID"},
		{"create of a pending record", newCreateStep("S", ph, interrupted, nil, nil, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr},
			"engine: create step of S/A: the new record already has a pending operation"},
		{"update", newUpdateStep("S", ph, live, nil, live, nil, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr}, ""},
		{"update of nothing", newUpdateStep("S", ph, fresh, nil, fresh, nil, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr},
			"engine: update step of S/A: no live object to update"},
		{"delete", newDeleteStep("S", ph, live, nil, "", tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr}, ""},
		{"delete of nothing", newDeleteStep("S", ph, fresh, nil, "", tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr},
			"engine: delete step of S/A: no live object to delete"},
		{"delete without a provider", newDeleteStep("S", ph, noProvider, nil, "", tr),
			subject{stack: "S", logicalID: "A", typ: "T", turn: tr},
			`engine: delete step of S/A without a type or provider ("T", "")`},
		{"delete without a stack", newDeleteStep("", ph, live, nil, "", tr),
			subject{logicalID: "A", typ: "T", provider: "p", turn: tr},
			`engine: delete step without a stack or logical ID (""/"A")`},
		{"delete of a replaced object", newDeleteReplacedStep("S", "A", old, tr),
			subject{stack: "S", logicalID: "A", typ: "OldT", provider: "q", turn: tr}, ""},
		{"delete of a replaced object without an ID", newDeleteReplacedStep("S", "A", state.Object{Type: "T", Provider: "p"}, tr),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p", turn: tr},
			"engine: delete step of S/A: no replaced object to delete"},
		{"read", newReadStep("S", live, resource.Schema{}),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p"}, ""},
		{"locate", newLocateStep("S", interrupted),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p"}, ""},
		{"locate without a pending create", newLocateStep("S", live),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p"},
			"engine: locate step of S/A: no interrupted create to settle"},
		{"read of a replaced object", newReadReplacedStep("S", live, old),
			subject{stack: "S", logicalID: "A", typ: "OldT", provider: "q"}, ""},
		{"import", newImportStep("S", fresh, "a-9", resource.Schema{}),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p"}, ""},
		{"import without an ID", newImportStep("S", fresh, "", resource.Schema{}),
			subject{stack: "S", logicalID: "A", typ: "T", provider: "p"},
			"engine: import step of S/A: no physical ID to import"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sub := tt.step.subject()
			invalid := ""
			if sub.invalid != nil {
				invalid = sub.invalid.Error()
			}
			sub.invalid = nil
			if diff := cmp.Diff(tt.want, sub, cmp.AllowUnexported(subject{}, turn{})); diff != "" {
				t.Errorf("subject (-want +got):\n%s", diff)
			}
			if invalid != tt.invalid {
				t.Errorf("invalid = %q, want %q", invalid, tt.invalid)
			}
		})
	}
}
