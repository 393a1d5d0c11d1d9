package statetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// testReviewComments: an approval's and a rejection's comments are recorded on the deployment (bounded
// as messages: 4 KiB of UTF-8, kept whole), returned by UpdateDeployment, GetDeployment and lists; an
// abort takes none; a refused comment changes nothing.
func (c *config) testReviewComments(t *testing.T, b state.Backend) {
	ctx := t.Context()
	p := newDeployment("p", "web", state.StatusProposed, 1)
	r := newDeployment("r", "web", state.StatusProposed, 2)
	big := newDeployment("big", "api", state.StatusProposed, 3)
	q := waiting(newDeployment("q", "api", state.StatusPending, 4), 5)
	mustCreate(t, b, p, r, big, q)
	proposed := []state.DeploymentStatus{state.StatusProposed}

	comment := "Looks right: TTL 300 → 60 ✓\n<script>alert(1)</script>"
	got, err := b.UpdateDeployment(ctx, "p", state.Transition{From: proposed, To: state.StatusApproved, By: "bob@laptop", Comment: comment, At: at(10)})
	if err != nil {
		t.Fatalf("UpdateDeployment(p, approve with a comment) = %v", err)
	}
	wantP := *p
	wantP.Status, wantP.ApprovedBy, wantP.ApprovalComment, wantP.ApprovedAt = state.StatusApproved, "bob@laptop", comment, at(10)
	c.checkReturned(t, "UpdateDeployment(p, approve with a comment)", wantP, got)
	c.check(t, b, wantP)

	got, err = b.UpdateDeployment(ctx, "r", state.Transition{From: proposed, To: state.StatusRejected, By: "carol@desk",
		Error: "rejected: not on a Friday", Comment: "not on a Friday", At: at(11)})
	if err != nil {
		t.Fatalf("UpdateDeployment(r, reject with a comment) = %v", err)
	}
	wantR := *r
	wantR.Status, wantR.RejectedBy, wantR.Error, wantR.RejectionComment, wantR.FinishedAt =
		state.StatusRejected, "carol@desk", "rejected: not on a Friday", "not on a Friday", at(11)
	c.checkReturned(t, "UpdateDeployment(r, reject with a comment)", wantR, got)
	c.check(t, b, wantR)

	// Lists carry the comments too (what a stack's history shows).
	list, err := b.ListDeployments(ctx, state.DeploymentFilter{Stack: "web"})
	if err != nil {
		t.Fatalf("ListDeployments(web) = %v", err)
	}
	want := []state.Deployment{c.expect(listed(wantR)), c.expect(listed(wantP))}
	if diff := cmp.Diff(want, list, c.cmp()); diff != "" {
		t.Errorf("ListDeployments(web) (-want +got):\n%s", diff)
	}

	// A comment longer than 4 KiB, or not UTF-8, is refused and changes nothing; one of exactly 4 KiB is
	// kept whole.
	for _, bad := range []string{strings.Repeat("x", state.MaxMessageBytes+1), "bad \xff byte"} {
		if _, err := b.UpdateDeployment(ctx, "big", state.Transition{From: proposed, To: state.StatusApproved, By: "bob@laptop", Comment: bad, At: at(12)}); err == nil {
			t.Errorf("UpdateDeployment(big, approve with a %d-byte comment) = nil, want an error", len(bad))
		}
	}
	if got := mustGetDeployment(t, b, "big"); got.Status != state.StatusProposed || got.ApprovalComment != "" {
		t.Errorf("after refused comments, big is %s with comment %q, want PROPOSED without", got.Status, got.ApprovalComment)
	}
	full := strings.Repeat("é", state.MaxMessageBytes/2)
	if _, err := b.UpdateDeployment(ctx, "big", state.Transition{From: proposed, To: state.StatusApproved, By: "bob@laptop", Comment: full, At: at(13)}); err != nil {
		t.Fatalf("UpdateDeployment(big, approve with a 4 KiB comment) = %v", err)
	}
	if got := mustGetDeployment(t, b, "big").ApprovalComment; got != full {
		t.Errorf("GetDeployment(big).ApprovalComment has %d bytes, want the %d given", len(got), len(full))
	}

	// An abort takes no comment.
	if _, err := b.UpdateDeployment(ctx, "q", state.Transition{From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusAborted,
		By: "dave@ci-9", Comment: "why", At: at(14)}); err == nil {
		t.Errorf("UpdateDeployment(q, abort with a comment) = nil, want an error")
	}
	if got := mustGetDeployment(t, b, "q").Status; got != state.StatusPending {
		t.Errorf("after a refused abort, q is %s, want PENDING", got)
	}
}

// testDeploymentPages: a stack's history read a page at a time (Limit, then Before = state.NextBefore of
// the page before) is the whole history, newest first, each deployment once; Kinds filters by kind, with
// the other filters and the cursor.
func (c *config) testDeploymentPages(t *testing.T, b state.Backend) {
	ctx := t.Context()
	kinds := []state.DeploymentKind{state.KindDeploy, state.KindDestroy, state.KindRefresh}
	var ds []*state.Deployment
	for i := range 23 {
		stack := "web"
		if i%4 == 3 {
			stack = "api"
		}
		d := newDeployment(strings.Repeat("0", 3)+string(rune('a'+i)), stack, state.StatusProposed, i)
		d.Kind = kinds[i%3]
		if d.Kind != state.KindDeploy {
			d.Status, d.Plan = state.StatusPending, nil // only a deploy is proposed
		}
		ds = append(ds, d)
	}
	mustCreate(t, b, ds...)

	tests := []struct {
		name string
		f    state.DeploymentFilter
	}{
		{"every deployment", state.DeploymentFilter{}},
		{"a stack", state.DeploymentFilter{Stack: "web"}},
		{"a kind", state.DeploymentFilter{Kinds: []state.DeploymentKind{state.KindDestroy}}},
		{"a stack's kinds", state.DeploymentFilter{Stack: "web", Kinds: []state.DeploymentKind{state.KindDeploy, state.KindRefresh}}},
		{"a stack's kinds and a status", state.DeploymentFilter{Stack: "web", Kinds: []state.DeploymentKind{state.KindDeploy, state.KindRefresh},
			Statuses: []state.DeploymentStatus{state.StatusPending}}},
	}
	for _, tt := range tests {
		var want []string
		for _, d := range slices.Backward(ds) {
			if tt.f.Match(d) {
				want = append(want, d.ID)
			}
		}
		all, err := b.ListDeployments(ctx, tt.f)
		if err != nil {
			t.Fatalf("ListDeployments(%s) = %v", tt.name, err)
		}
		if diff := cmp.Diff(want, idsOf(all)); diff != "" {
			t.Errorf("ListDeployments(%s) (-want +got):\n%s", tt.name, diff)
		}
		for _, limit := range []int{1, 4, len(want)} {
			f := tt.f
			f.Limit = limit
			var got []string
			for page := 0; ; page++ {
				if page > len(want)+1 {
					t.Fatalf("%s, %d a page: more pages than deployments", tt.name, limit)
				}
				list, err := b.ListDeployments(ctx, f)
				if err != nil {
					t.Fatalf("ListDeployments(%s, page %d of %d) = %v", tt.name, page, limit, err)
				}
				if len(list) > limit {
					t.Fatalf("ListDeployments(%s, page %d of %d) = %d deployments", tt.name, page, limit, len(list))
				}
				got = append(got, idsOf(list)...)
				if f.Before = state.NextBefore(list, limit); f.Before == 0 {
					break
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, %d a page (-want +got):\n%s", tt.name, limit, diff)
			}
		}
	}
	// A cursor just above the oldest deployment is a page of it alone; its own, an empty page.
	every, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil || len(every) != len(ds) {
		t.Fatalf("ListDeployments() = %d deployments, %v; want %d", len(every), err, len(ds))
	}
	second, first := every[len(every)-2], every[len(every)-1]
	if oldest, err := b.ListDeployments(ctx, state.DeploymentFilter{Before: second.Seq}); err != nil || !slices.Equal(idsOf(oldest), []string{first.ID}) {
		t.Errorf("ListDeployments(before the second) = %v, %v; want [%s]", idsOf(oldest), err, first.ID)
	}
	if none, err := b.ListDeployments(ctx, state.DeploymentFilter{Before: first.Seq}); err != nil || len(none) != 0 {
		t.Errorf("ListDeployments(before the first) = %v, %v; want none", idsOf(none), err)
	}
}

func idsOf(ds []state.Deployment) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}
