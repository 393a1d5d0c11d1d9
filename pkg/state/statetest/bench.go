package statetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// PageDeadline is how long a page of a stack's history may take (issue 23: a stack with 10,000
// deployments pages in under 200 ms).
const PageDeadline = 200 * time.Millisecond

// BenchmarkPages reads pages of 50 deployments of a stack with 10,000 deployments (and another stack's
// 1,000 among them, created in turn): the first page, one in the middle and the last, unfiltered and by
// kind (and status), each through the cursor (DeploymentFilter.Before) as the console pages. A page that
// takes PageDeadline or longer on average fails the benchmark. be must be empty.
func BenchmarkPages(b *testing.B, be state.Deployments) {
	ctx := b.Context()
	const web, api, batch = 10_000, 1_000, 500
	kinds := []state.DeploymentKind{state.KindDeploy, state.KindDeploy, state.KindDestroy, state.KindRefresh}
	start := time.Now()
	var ds []*state.Deployment
	flush := func() {
		if err := be.CreateDeployments(ctx, ds); err != nil {
			b.Fatalf("CreateDeployments: %v", err)
		}
		ds = ds[:0]
	}
	for i := range web + api {
		stack := "web"
		if i%11 == 10 {
			stack = "api"
		}
		d := newDeployment(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), stack, state.StatusProposed, i)
		d.Kind = kinds[i%len(kinds)]
		if d.Kind != state.KindDeploy {
			d.Status, d.Plan = state.StatusPending, nil
		}
		if ds = append(ds, d); len(ds) == batch {
			flush()
		}
	}
	if len(ds) > 0 {
		flush()
	}
	b.Logf("created %d deployments in %s", web+api, time.Since(start).Round(time.Millisecond))

	// cursor returns the Before that starts the page at position at (0: the first) of what f selects.
	cursor := func(f state.DeploymentFilter, at int) int64 {
		if at == 0 {
			return 0
		}
		f.Limit = at
		list, err := be.ListDeployments(ctx, f)
		if err != nil || len(list) != at {
			b.Fatalf("ListDeployments(%+v) = %d deployments, %v; want %d", f, len(list), err, at)
		}
		return state.NextBefore(list, at)
	}
	byKind := []state.DeploymentKind{state.KindDestroy}
	tests := []struct {
		name string
		f    state.DeploymentFilter
		at   int // the page's first position
		want int
	}{
		{"first", state.DeploymentFilter{Stack: "web"}, 0, 50},
		{"middle", state.DeploymentFilter{Stack: "web"}, 5_000, 50},
		{"last", state.DeploymentFilter{Stack: "web"}, web - 30, 30},
		{"kind/first", state.DeploymentFilter{Stack: "web", Kinds: byKind}, 0, 50},
		{"kind/last", state.DeploymentFilter{Stack: "web", Kinds: byKind}, web/4 - 20, 20},
		{"kind-and-status/middle", state.DeploymentFilter{Stack: "web", Kinds: []state.DeploymentKind{state.KindDeploy, state.KindRefresh},
			Statuses: []state.DeploymentStatus{state.StatusPending}}, 1_000, 50},
		{"every-stack/middle", state.DeploymentFilter{}, 5_000, 50},
	}
	for _, tt := range tests {
		f := tt.f
		f.Before = cursor(f, tt.at)
		f.Limit = 50
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				list, err := be.ListDeployments(ctx, f)
				if err != nil || len(list) != tt.want {
					b.Fatalf("ListDeployments(%+v) = %d deployments, %v; want %d", f, len(list), err, tt.want)
				}
			}
			if per := b.Elapsed() / time.Duration(b.N); per >= PageDeadline {
				b.Errorf("a page took %s on average, want under %s", per, PageDeadline)
			}
		})
	}
}
