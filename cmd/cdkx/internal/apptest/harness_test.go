package apptest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// TestScrub: what differs from run to run is replaced, each UUID by the same name every time it appears,
// so that golden files still show which lines name the same deployment.
func TestScrub(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		paths          map[string]string
	}{
		{name: "uuids in order of first appearance",
			in:   "a 3fa85f64-5717-4562-b3fc-2c963f66afa6 b 9b2e0c1d-0000-4000-8000-000000000001 a 3fa85f64-5717-4562-b3fc-2c963f66afa6",
			want: "a ID1 b ID2 a ID1"},
		{name: "runner and pid", in: "running by alice pid 4242 on ci-7\nheld by pid 17",
			want: "running by alice pid PID on MACHINE\nheld by pid PID"},
		{name: "creator", in: "created by " + cli.CreatedBy(), want: "created by USER@HOST"},
		{name: "paths", in: "loaded /tmp/x/app/cdkx.out", paths: map[string]string{"APP": "/tmp/x/app"},
			want: "loaded APP/cdkx.out"},
		{name: "nothing to scrub", in: "Deploy complete: 2 created", want: "Deploy complete: 2 created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, apptest.Scrub(tc.in, tc.paths)); diff != "" {
				t.Errorf("Scrub mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSortEvents: runs of event lines are sorted; other lines stay where they are.
func TestSortEvents(t *testing.T) {
	t.Parallel()
	at := apptest.Now.Format("2006-01-02T15:04:05Z07:00")
	in := "head\n" + at + " S b\n" + at + " S a\nmiddle\n{\"kind\":\"event\",\"z\":1}\n{\"kind\":\"event\",\"a\":1}\ntail"
	want := "head\n" + at + " S a\n" + at + " S b\nmiddle\n{\"kind\":\"event\",\"a\":1}\n{\"kind\":\"event\",\"z\":1}\ntail"
	if diff := cmp.Diff(want, apptest.SortEvents(in)); diff != "" {
		t.Errorf("SortEvents mismatch (-want +got):\n%s", diff)
	}
}
