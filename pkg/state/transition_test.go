package state_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

var allStatuses = []state.DeploymentStatus{state.StatusProposed, state.StatusApproved, state.StatusRejected,
	state.StatusPending, state.StatusRunning, state.StatusCompleted, state.StatusFailed, state.StatusAborted}

// outcome is what CheckTransition answers: allowed, forbidden (*ForbiddenError) or none (*TransitionError).
type outcome string

const (
	allowed   outcome = "allowed"
	forbidden outcome = "forbidden"
	none      outcome = "no such transition"
)

func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return allowed
	case errors.As(err, new(*state.ForbiddenError)):
		return forbidden
	case errors.As(err, new(*state.TransitionError)):
		return none
	}
	return outcome("unexpected error: " + err.Error())
}

// TestCheckTransition checks every (from, to, who) triple, with and without the second-person rule,
// against the documented table (written out here, apart from the rule function).
func TestCheckTransition(t *testing.T) {
	t.Parallel()
	const creator, other, runner = "alice@a", "bob@b", "bob@b pid 7 on m1"
	who := map[string]state.Actor{
		"creator":      {Name: creator},
		"other":        {Name: other},
		"runner":       {Name: other, Runner: runner},
		"other runner": {Name: other, Runner: "bob@b pid 8 on m1"},
	}
	type key struct {
		from, to state.DeploymentStatus
		who      string
	}
	// documented lists the allowed triples; secondPerson, those the second-person rule forbids.
	documented := map[key]bool{}
	for w := range who {
		documented[key{state.StatusProposed, state.StatusApproved, w}] = true
		documented[key{state.StatusProposed, state.StatusRejected, w}] = true
		documented[key{state.StatusPending, state.StatusRunning, w}] = true
		documented[key{state.StatusApproved, state.StatusRunning, w}] = true
		documented[key{state.StatusProposed, state.StatusAborted, w}] = true
		documented[key{state.StatusPending, state.StatusAborted, w}] = true
		documented[key{state.StatusApproved, state.StatusAborted, w}] = true
	}
	for _, to := range []state.DeploymentStatus{state.StatusCompleted, state.StatusFailed, state.StatusAborted} {
		documented[key{state.StatusRunning, to, "runner"}] = true
	}
	endsRun := func(k key) bool {
		return k.from == state.StatusRunning && (k.to == state.StatusCompleted || k.to == state.StatusFailed || k.to == state.StatusAborted)
	}
	for _, second := range []bool{false, true} {
		for _, from := range allStatuses {
			for _, to := range allStatuses {
				for w, actor := range who {
					k := key{from, to, w}
					want := none
					switch {
					case documented[k] && second && from == state.StatusProposed && to == state.StatusApproved && w == "creator":
						want = forbidden
					case documented[k]:
						want = allowed
					case endsRun(k):
						want = forbidden
					}
					t.Run(fmt.Sprintf("%s->%s by %s second=%v", from, to, w, second), func(t *testing.T) {
						t.Parallel()
						d := state.Deployment{ID: "d1", Status: from, CreatedBy: creator}
						if from == state.StatusRunning {
							d.Runner = runner
						}
						got := outcomeOf(state.CheckTransition(d, to, actor, state.Policy{RequireSecondPerson: second}))
						if got != want {
							t.Errorf("CheckTransition(%s -> %s, %s, second person %v) = %s, want %s", from, to, w, second, got, want)
						}
					})
				}
			}
		}
	}
}

func TestCheckCreate(t *testing.T) {
	t.Parallel()
	kinds := []state.DeploymentKind{state.KindDeploy, state.KindPlan, state.KindDestroy, state.KindImport, state.KindRefresh}
	for _, second := range []bool{false, true} {
		for _, kind := range kinds {
			for _, st := range allStatuses {
				want := none
				switch {
				case st != state.StatusProposed && st != state.StatusPending && st != state.StatusApproved:
					want = "error"
				case second && kind == state.KindDeploy && st != state.StatusProposed:
					want = forbidden
				default:
					want = allowed
				}
				t.Run(fmt.Sprintf("%s %s second=%v", kind, st, second), func(t *testing.T) {
					t.Parallel()
					err := state.CheckCreate(state.Deployment{ID: "d1", Stack: "S", Kind: kind, Status: st}, state.Policy{RequireSecondPerson: second})
					got := outcomeOf(err)
					if err != nil && got != forbidden {
						got = "error"
					}
					if got != want {
						t.Errorf("CheckCreate(%s %s, second person %v) = %s (%v), want %s", kind, st, second, got, err, want)
					}
				})
			}
		}
	}
}
