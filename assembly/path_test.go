package assembly

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONPath(t *testing.T) {
	t.Parallel()
	type step struct {
		key   string
		index int
	}
	k := func(key string) step { return step{key: key, index: -1} }
	i := func(index int) step { return step{index: index} }
	deep := make([]step, 200)
	for n := range deep {
		deep[n] = i(n % 10)
	}
	tests := []struct {
		name   string
		prefix string
		steps  []step
		want   string
	}{
		{name: "empty"},
		{name: "prefix only", prefix: "resources.X", want: "resources.X"},
		{name: "keys and indexes", prefix: "resources.X.properties", steps: []step{k("records"), i(0), k("name")},
			want: "resources.X.properties.records[0].name"},
		{name: "no prefix", steps: []step{k("a"), i(12), k("b")}, want: "a[12].b"},
		{name: "index first", steps: []step{i(3), k("a")}, want: "[3].a"},
		{name: "empty keys", steps: []step{k(""), k(""), k("a")}, want: "a"}, // as JoinPath does
		{
			name: "deep", prefix: "resources.X.properties", steps: append([]step{k("input")}, deep...),
			want: "resources.X.properties.input" + strings.Repeat("[0][1][2][3][4][5][6][7][8][9]", 4)[:100] + "…" +
				strings.Repeat("[0][1][2][3][4][5][6][7][8][9]", 5)[22:],
		},
		{
			name: "long key", prefix: "outputs.O", steps: []step{k(strings.Repeat("a", 1000)), k("b")},
			want: "outputs.O." + strings.Repeat("a", 118) + "…" + strings.Repeat("a", 126) + ".b",
		},
		{
			name: "long prefix", prefix: strings.Repeat("p", 1000), steps: []step{i(1)},
			want: strings.Repeat("p", 128) + "…" + strings.Repeat("p", 125) + "[1]",
		},
		{
			name: "runes are not cut", prefix: "x" + strings.Repeat("é", 300),
			want: "x" + strings.Repeat("é", 63) + "…" + strings.Repeat("é", 64),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &jsonPath{prefix: tt.prefix}
			for _, s := range tt.steps {
				if s.index < 0 {
					p.pushKey(s.key)
				} else {
					p.pushIndex(s.index)
				}
			}
			got := p.String()
			if got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) || len(got) > MaxPathLen+len("…") {
				t.Errorf("String() = %q: %d bytes, valid UTF-8: %t", got, len(got), utf8.ValidString(got))
			}
			// Popping returns to the prefix.
			for range tt.steps {
				p.pop()
			}
			if got, want := p.len(), len(tt.prefix); got != want {
				t.Errorf("len() after popping = %d, want %d", got, want)
			}
		})
	}
}

func TestFindTokensAndResolvePaths(t *testing.T) {
	t.Parallel()
	tok := func(ref string) map[string]any { return map[string]any{"ref": ref, "attr": "id"} }
	v := map[string]any{"b": []any{"x", tok("B"), map[string]any{"c": tok("C")}}, "a": tok("A")}
	var got []string
	for _, at := range FindTokens("properties", v) {
		got = append(got, at.Ref+"@"+at.Path)
	}
	want := "A@properties.a B@properties.b[1] C@properties.b[2].c"
	if strings.Join(got, " ") != want {
		t.Errorf("FindTokens() = %q, want %q", got, want)
	}
	paths := map[string]string{}
	r, err := Resolve("properties", v, func(at TokenAt) (any, error) {
		paths[at.Ref] = at.Path
		return at.Ref + "!", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(map[string]any)["b"].([]any)[2].(map[string]any)["c"]; got != "C!" {
		t.Errorf("Resolve() b[2].c = %v, want C!", got)
	}
	if paths["C"] != "properties.b[2].c" || paths["A"] != "properties.a" {
		t.Errorf("Resolve() paths = %v", paths)
	}
}
