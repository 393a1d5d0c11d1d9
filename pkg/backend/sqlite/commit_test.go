package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// The statements Commit used before its writes went out as multi-row INSERTs: one per row, events
// numbered by a subquery each. TestMultiRowWritesMatchRowByRow writes with them as the reference.
const (
	rowPutResource = `INSERT INTO resources (stack, logical_id, data) VALUES ($1, $2, $3)
ON CONFLICT (stack, logical_id) DO UPDATE SET data = excluded.data`
	rowAppendEvent = `INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason)
SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5, $6, $7 FROM events WHERE deployment_id = $1`
)

// writeRowByRow writes r as Commit did with one statement per row, in the caller's transaction.
func writeRowByRow(ctx context.Context, conn *sql.Conn, r *commitqueue.Request, now int64) (version int64, err error) {
	if err := conn.QueryRowContext(ctx, sqlBumpVersion, r.Stack, now).Scan(&version); err != nil {
		return 0, err
	}
	for _, c := range r.Changes {
		switch c.Kind {
		case state.PutResource:
			_, err = conn.ExecContext(ctx, rowPutResource, r.Stack, c.LogicalID, c.Data)
		case state.DeleteResource:
			_, err = conn.ExecContext(ctx, sqlDeleteResource, r.Stack, c.LogicalID)
		case state.PutStack:
			_, err = conn.ExecContext(ctx, sqlPutStack, r.Stack, c.Status, c.Data, c.Deps)
		}
		if err != nil {
			return 0, err
		}
	}
	if _, err := conn.ExecContext(ctx, sqlInsertJournal, r.Stack, version, r.DeploymentID, r.Journal, now); err != nil {
		return 0, err
	}
	for _, e := range r.Events {
		if e.Seq == 0 {
			_, err = conn.ExecContext(ctx, rowAppendEvent,
				e.DeploymentID, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		} else {
			_, err = conn.ExecContext(ctx, sqlInsertEvent,
				e.DeploymentID, e.Seq, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		}
		if err != nil {
			return 0, err
		}
	}
	return version, nil
}

// dumpTables returns every row of the tables Commit writes, in key order, as text.
func dumpTables(t *testing.T, b *Backend) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table, query := range map[string]string{
		"stacks":    `SELECT name, version, status, outputs, dependencies, updated_at FROM stacks ORDER BY name`,
		"resources": `SELECT stack, logical_id, data FROM resources ORDER BY stack, logical_id`,
		"journal":   `SELECT stack, version, deployment_id, data, created_at FROM journal ORDER BY stack, version`,
		"events":    `SELECT deployment_id, seq, time, stack, logical_id, type, status, reason FROM events ORDER BY deployment_id, seq`,
	} {
		rows, err := b.r.QueryContext(t.Context(), query)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], fmt.Sprint(vals...))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		_ = rows.Close()
	}
	return out
}

// TestMultiRowWritesMatchRowByRow writes the same groups of Commits with Commit's multi-row statements
// and with one statement per row, and wants the same rows: runs of puts of every length around the
// statements' sizes (powers of two up to 64), deletes and stack puts between them, events numbered by the
// store and explicit ones, of two deployments, interleaved, over several Commits of one transaction.
func TestMultiRowWritesMatchRowByRow(t *testing.T) {
	at := time.Unix(1_770_000_000, 0).UTC()
	put := func(id string, n int) state.Change {
		return state.Change{Kind: state.PutResource, Resource: &state.Resource{LogicalID: id, Type: "T", Status: "S" + strconv.Itoa(n), UpdatedAt: at}}
	}
	puts := func(prefix string, n int) []state.Change {
		var cs []state.Change
		for i := range n {
			cs = append(cs, put(prefix+strconv.Itoa(i), i))
		}
		return cs
	}
	events := func(dep string, n int, explicit ...int64) []state.Event {
		var es []state.Event
		for i := range n {
			es = append(es, state.Event{DeploymentID: dep, Time: at.Add(time.Duration(i)), LogicalID: "e" + strconv.Itoa(i), Status: "S"})
		}
		for i, seq := range explicit {
			es = append(es, state.Event{DeploymentID: dep, Seq: seq, Status: "explicit " + strconv.Itoa(i)})
			es = append(es, state.Event{DeploymentID: dep, Status: "after explicit " + strconv.Itoa(i)})
		}
		return es
	}
	type commit struct {
		dep, stack string
		changes    []state.Change
		events     []state.Event
	}
	cat := func(css ...[]state.Change) []state.Change {
		var out []state.Change
		for _, cs := range css {
			out = append(out, cs...)
		}
		return out
	}
	tests := []struct {
		name   string
		groups [][]commit
	}{
		{"one put and event", [][]commit{{{"d", "web", puts("r", 1), events("d", 1)}}}},
		{"every length up to 130", func() [][]commit {
			var gs [][]commit
			for n := range 131 {
				gs = append(gs, []commit{{"d", "web", puts("r", n), events("d", n)}})
			}
			return gs
		}()},
		{"level of a wave", [][]commit{
			{{"d", "web", puts("r", 200), events("d", 200)}},
			{{"d", "web", cat(puts("r", 100), puts("s", 100)), events("d", 200)}},
		}},
		{"deletes and stack puts split runs", [][]commit{
			{{"d", "web", cat(puts("r", 70), []state.Change{{Kind: state.DeleteResource, LogicalID: "r3"}}, puts("r", 5),
				[]state.Change{{Kind: state.PutStack, Status: "UPDATE_IN_PROGRESS", Outputs: map[string]any{"a": "b"}, Dependencies: []string{"x"}}},
				puts("q", 66)), events("d", 3)}},
		}},
		{"the same resource twice in a run", [][]commit{
			{{"d", "web", cat(puts("r", 3), []state.Change{put("r1", 9)}, puts("r", 2)), events("d", 2)}},
		}},
		{"explicit seqs among numbered ones", [][]commit{
			{{"d", "web", puts("r", 2), events("d", 3, 10, 20)}},
			{{"d", "web", puts("r", 2), events("d", 40, 100)}},
			{{"d", "web", nil, events("d", 0, 70)}},
		}},
		{"lone events then a run in one transaction", [][]commit{
			{
				{"d", "web", puts("r", 1), events("d", 1)},
				{"d", "web", puts("r", 1), events("d", 1)},
				{"d", "web", nil, events("d", 5)},
				{"d", "web", nil, events("d", 1)},
			},
		}},
		{"several commits, stacks and deployments in one transaction", [][]commit{
			{
				{"d", "web", puts("r", 65), events("d", 65)},
				{"e", "api", puts("a", 3), events("e", 33)},
				{"d", "api", nil, events("d", 2)},
				{"d", "web", puts("r", 9), events("d", 70, 500)},
			},
			{{"e", "api", nil, events("e", 1)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Unix(1_780_000_000, 0).UTC()
			multi, rowByRow := openTemp(t), openTemp(t)
			multi.now = func() time.Time { return now }
			var gotVersions, wantVersions []int64
			for _, g := range tt.groups {
				var reqs []*commitqueue.Request
				for _, c := range g {
					r, err := commitqueue.Prepare(ctx, c.dep, c.stack, c.changes, c.events)
					if err != nil {
						t.Fatal(err)
					}
					reqs = append(reqs, r)
				}
				if err := multi.writeTx(reqs); err != nil {
					t.Fatal(err)
				}
				for _, r := range reqs {
					gotVersions = append(gotVersions, r.Version)
				}
				if err := rowByRow.wr.inTx(ctx, func(conn *sql.Conn) error {
					for _, r := range reqs {
						v, err := writeRowByRow(ctx, conn, r, sqlschema.Nanos(now))
						if err != nil {
							return err
						}
						wantVersions = append(wantVersions, v)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(wantVersions, gotVersions); diff != "" {
				t.Errorf("versions (-row by row +multi-row):\n%s", diff)
			}
			if diff := cmp.Diff(dumpTables(t, rowByRow), dumpTables(t, multi)); diff != "" {
				t.Errorf("tables (-row by row +multi-row):\n%s", diff)
			}
		})
	}
}
