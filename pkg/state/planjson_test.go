package state_test

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestPlanAppendJSONMatchesEncodingJSON: Plan.AppendJSON gives the bytes json.Marshal gives, side by side,
// on plans with every field, odd strings and every kind of value.
func TestPlanAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	odd := []string{"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "bad \xff utf-8 \xc3", "line\u2028para\u2029", "é ü 日本 🎉", "\ufffd"}
	values := []any{nil, true, false, "s", json.Number("1"), json.Number("1.0"), json.Number("-0.5e+10"),
		json.Number("123456789012345678901234567890"), json.Number(""), json.Number("0"), json.Number("-0"),
		json.Number("0.0e-0"), json.Number("10E+2"), json.Number("-1.25E7"), 1.5, 3, int64(-7), float32(0.1),
		resource.Unknown{}, resource.Sensitive, map[string]any{}, map[string]any(nil), []any{}, []any(nil),
		map[string]any{"b": []any{json.Number("2"), map[string]any{"<": "&"}}, "a": nil, "": "empty key"},
		[]any{resource.Unknown{}, []any{[]any{}}, map[string]any{"x\u2028": "\xff"}},
		map[string]string{"typed": "map"}, []string{"typed", "list"}}
	for _, s := range odd {
		values = append(values, s, map[string]any{s: s})
	}
	tests := []struct {
		name string
		plan *state.Plan
	}{
		{"nil", nil},
		{"zero", &state.Plan{}},
		{"empty steps", &state.Plan{Steps: []state.PlanStep{}, Values: true}},
		{"counts and reads", &state.Plan{Create: 1, Update: 2, Replace: 3, Delete: 4, Same: 5, Steps: []state.PlanStep{},
			SnapshotHash: "abc<>", Values: true, Reads: map[string]int64{"Z": 3, "A": -1, "m\u2028": 0}}},
		{"empty reads", &state.Plan{Steps: []state.PlanStep{}, Reads: map[string]int64{}}},
		{"every step field", &state.Plan{Steps: []state.PlanStep{
			{Resource: "S/A", Stack: "S", LogicalID: "A", Type: "T::T::T", Op: "create",
				Inputs: map[string]any{"name": "n", "ttl": json.Number("60"), "later": resource.Unknown{}}},
			{Resource: "S/B", Stack: "S", LogicalID: "B", Type: "T::T::T", Op: "replace", PhysicalID: "id-1",
				Reason: "create-only property changed", Replacement: state.ReplaceCreateFirst,
				Changes: []state.PlanChange{{Name: "a", Old: "x", New: resource.Unknown{}, CreateOnly: true},
					{Name: "b", Old: nil, New: []any{json.Number("1")}}},
				Notes: []string{"downtime", "data lost"}, Paths: []string{"properties.a", "properties.b"}, Digest: "00ff"},
			{Resource: "S/C", Op: "delete", Inputs: map[string]any{}, Changes: []state.PlanChange{}, Notes: []string{}},
		}}},
	}
	for _, s := range odd {
		tests = append(tests, struct {
			name string
			plan *state.Plan
		}{"string " + s, &state.Plan{Steps: []state.PlanStep{{Resource: s, Stack: s, LogicalID: s, Type: s, Op: s,
			PhysicalID: s, Reason: s, Replacement: s, Notes: []string{s}, Paths: []string{s}, Digest: s,
			Changes: []state.PlanChange{{Name: s, Old: s, New: s}}, Inputs: map[string]any{s: s}}}, SnapshotHash: s,
			Reads: map[string]int64{s: 1}}})
	}
	for i, v := range values {
		tests = append(tests, struct {
			name string
			plan *state.Plan
		}{"value " + strconv.Itoa(i), &state.Plan{Steps: []state.PlanStep{{Op: "update",
			Changes: []state.PlanChange{{Name: "v", Old: v, New: v}}, Inputs: map[string]any{"v": v}}}}})
	}
	rng := rand.New(rand.NewPCG(22, 6))
	for i := range 200 {
		tests = append(tests, struct {
			name string
			plan *state.Plan
		}{"random " + strconv.Itoa(i), randomPlan(rng)})
	}
	for _, tt := range tests {
		want, wantErr := json.Marshal(tt.plan)
		got, gotErr := tt.plan.AppendJSON([]byte("prefix"))
		if wantErr != nil || gotErr != nil {
			t.Fatalf("%s: errors %v, %v", tt.name, wantErr, gotErr)
		}
		if diff := cmp.Diff(string(want), string(got[len("prefix"):])); diff != "" {
			t.Errorf("%s: AppendJSON differs from json.Marshal (-want +got):\n%s", tt.name, diff)
		}
		if s, err := tt.plan.JSON(); err != nil || s != string(want) {
			t.Errorf("%s: JSON() = %q, %v; want json.Marshal's %q", tt.name, s, err, want)
		}
	}
}

// TestPlanAppendJSONErrors: a value encoding/json cannot encode fails AppendJSON with encoding/json's error.
func TestPlanAppendJSONErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []any{json.Number("1.2.3"), json.Number(" 1"), json.Number("01"), json.Number("1."),
		json.Number(".5"), json.Number("1e"), json.Number("1e+"), json.Number("+1"), json.Number("-"), json.Number("--1"),
		json.Number("0x1"), json.Number("1 "), json.Number("NaN"), make(chan int), map[string]any{"f": func() {}}} {
		p := &state.Plan{Steps: []state.PlanStep{{Changes: []state.PlanChange{{Name: "v", New: v}}}}}
		_, wantErr := json.Marshal(p)
		_, gotErr := p.AppendJSON(nil)
		if wantErr == nil || gotErr == nil || gotErr.Error() != wantErr.Error() {
			t.Errorf("%#v: AppendJSON error %v, json.Marshal's %v", v, gotErr, wantErr)
		}
	}
}

func randomPlan(rng *rand.Rand) *state.Plan {
	p := &state.Plan{Create: rng.IntN(3), Same: rng.IntN(3), Values: rng.IntN(2) == 0, SnapshotHash: randomString(rng)}
	for range rng.IntN(4) {
		s := state.PlanStep{Resource: randomString(rng), Op: randomString(rng), Reason: randomString(rng)}
		if rng.IntN(2) == 0 {
			s.Inputs, _ = randomValue(rng, 3).(map[string]any)
		}
		for range rng.IntN(3) {
			s.Changes = append(s.Changes, state.PlanChange{Name: randomString(rng), Old: randomValue(rng, 3),
				New: randomValue(rng, 3), CreateOnly: rng.IntN(2) == 0})
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

func randomValue(rng *rand.Rand, depth int) any {
	n := rng.IntN(9)
	if depth == 0 {
		n %= 5
	}
	switch n {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return randomString(rng)
	case 3:
		return json.Number([]string{"0", "-1", "2.50", "1e3", "1E-7", "99999999999999999999"}[rng.IntN(6)])
	case 4:
		return resource.Unknown{}
	case 5, 6:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[randomString(rng)] = randomValue(rng, depth-1)
		}
		return m
	}
	var l []any
	for range rng.IntN(4) {
		l = append(l, randomValue(rng, depth-1))
	}
	return l
}

func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029",
		"\xff", "\xe2\x80", "🎉", "\ufffd", "/"}
	b := []byte{}
	for range rng.IntN(8) {
		b = append(b, pieces[rng.IntN(len(pieces))]...)
	}
	return string(b)
}

// benchPlan is the plan of a first deploy of n Cdkx::Core::Data in chains, as the bench deploys them.
func benchPlan(n int) *state.Plan {
	p := &state.Plan{Create: n, Steps: make([]state.PlanStep, n), Values: true}
	for i := range p.Steps {
		id := "Chain" + strconv.Itoa(i/10) + "Node" + strconv.Itoa(i%10)
		input := map[string]any{"chain": json.Number(strconv.Itoa(i / 10)), "depth": json.Number(strconv.Itoa(i % 10)),
			"payload": "value-" + id, "previous": resource.Unknown{}}
		p.Steps[i] = state.PlanStep{Resource: "Bench/" + id, Stack: "Bench", LogicalID: id, Type: "Cdkx::Core::Data",
			Op: "create", Inputs: map[string]any{"input": input}}
	}
	return p
}

// BenchmarkPlanJSON encodes the plan of 10,000 creates: AppendJSON against json.Marshal.
func BenchmarkPlanJSON(b *testing.B) {
	p := benchPlan(10_000)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.AppendJSON(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
