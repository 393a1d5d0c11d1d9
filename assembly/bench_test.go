package assembly

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// deepTemplate is a stack template whose one resource holds n values, each nested depth lists deep with
// a token at the bottom: the hostile shape of issue 8 was n = 10, depth = 9,990.
func deepTemplate(n, depth int) string {
	values := make([]string, n)
	for i := range values {
		values[i] = strings.Repeat("[", depth) + `{"ref": "R", "attr": "output"}` + strings.Repeat("]", depth)
	}
	return fmt.Sprintf(`{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": [%s]}}}}`,
		strings.Join(values, ", "))
}

// deepValue is what deepTemplate(n, depth) holds as properties, built without the decoder (and its
// MaxDepth), as the planner and engine may meet it.
func deepValue(n, depth int) map[string]any {
	values := make([]any, n)
	for i := range values {
		var v any = map[string]any{"ref": "R", "attr": "output"}
		for range depth {
			v = []any{v}
		}
		values[i] = v
	}
	return map[string]any{"input": values}
}

// BenchmarkLoadDeep loads and validates ten property values nested depth lists deep. At 990 the
// template is nested as deep as MaxDepth allows (with the 6 levels around the lists); at 9,990 (issue 8)
// it is refused.
func BenchmarkLoadDeep(b *testing.B) {
	for _, depth := range []int{990, 9990} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			read := mapReader(map[string]string{"manifest.json": manifest("A"), "A.json": deepTemplate(10, depth)})
			b.ReportAllocs()
			for b.Loop() {
				a, ds := load("cdkx.out", read, nil)
				if depth+6 > MaxDepth {
					if len(ds) != 1 {
						b.Fatalf("load() = %v, want one error", lines(ds))
					}
					continue
				}
				if a == nil || ds.HasErrors() {
					b.Fatalf("load() = %v", lines(ds))
				}
				if ds := Validate(a, fakeCatalog{}); len(ds) != 0 {
					b.Fatalf("Validate() = %v", lines(ds))
				}
			}
		})
	}
}

// BenchmarkFindTokensDeep finds the tokens of ten values nested 9,990 deep, as the planner does.
func BenchmarkFindTokensDeep(b *testing.B) {
	props := deepValue(10, 9990)
	b.ReportAllocs()
	for b.Loop() {
		if got := FindTokens("properties", props); len(got) != 10 {
			b.Fatalf("FindTokens() found %d tokens, want 10", len(got))
		}
	}
}

// BenchmarkResolveDeep resolves the tokens of ten values nested 9,990 deep, as the planner does.
func BenchmarkResolveDeep(b *testing.B) {
	props := deepValue(10, 9990)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve("properties", props, func(TokenAt) (any, error) { return "x", nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadAssets loads a stack of n resources, each with an absolute asset path among other strings:
// the rewrite walks every string once, and the asset is hashed once, not n times.
func BenchmarkLoadAssets(b *testing.B) {
	const n = 10000
	fh := sha("#cloud-config\n")
	res := make([]string, n)
	for i := range res {
		res[i] = fmt.Sprintf(`"R%d": {"type": "Multipass::Compute::Instance", "properties": {"name": "vm-%d", "image": "jammy",
			"cloudInit": "/home/dev/app/cdkx.out/assets/asset.%s/cloud-init.yaml", "mounts": [{"source": "/home/dev/src", "target": "/src"}]}}`, i, i, fh)
	}
	files := assetAssembly("#cloud-config\n", fh, `{}`)
	files["App.json"] = `{"resources": {` + strings.Join(res, ", ") + `}}`
	read := mapReader(files)
	assets := fileAssets{}
	for name, data := range files {
		assets[name] = []byte(data)
	}
	b.ReportAllocs()
	for b.Loop() {
		a, ds := load("cdkx.out", read, assets)
		if a == nil || len(ds) != 0 {
			b.Fatalf("load() = %v", lines(ds))
		}
	}
}

// chainsTemplate is the bench's template (go run ./bench): chains×10 Cdkx::Core::Data, each reading the
// previous one's id through a {ref, attr} token.
func chainsTemplate(chains int) string {
	var b strings.Builder
	b.WriteString(`{"resources": {`)
	for c := range chains {
		for d := range 10 {
			id := fmt.Sprintf("Chain%dNode%d%08X", c, d, c*10+d)
			if c+d > 0 {
				b.WriteString(",")
			}
			prev := ""
			if d > 0 {
				prev = fmt.Sprintf(`, "previous": {"ref": "Chain%dNode%d%08X", "attr": "id"}`, c, d-1, c*10+d-1)
			}
			fmt.Fprintf(&b, `%q: {"type": "Cdkx::Core::Data", "provider": "cdkx", "properties": {"input": {"chain": %d, "depth": %d, "payload": "value-%s"%s}}, "metadata": {"cdkx:path": "Bench/Chain%d/Node%d"}}`,
				id, c, d, id, prev, c, d)
		}
	}
	b.WriteString(`}}`)
	return b.String()
}

// BenchmarkLoadChains loads and validates the bench's template of 10,000 resources in chains of depth 10.
func BenchmarkLoadChains(b *testing.B) {
	read := mapReader(map[string]string{"manifest.json": manifest("A"), "A.json": chainsTemplate(1000)})
	b.ReportAllocs()
	for b.Loop() {
		a, ds := load("cdkx.out", read, nil)
		if a == nil || ds.HasErrors() {
			b.Fatalf("load() = %v", lines(ds))
		}
		if ds := Validate(a, fakeCatalog{}); ds.HasErrors() {
			b.Fatalf("Validate() = %v", lines(ds))
		}
	}
}

// BenchmarkLoadChainsRetained loads the bench's template of 100,000 resources and reports, besides the
// time and allocations of a load and validation, the heap the loaded assembly holds (retained-B: the
// live heap after a collection with the assembly, less the live heap without it).
func BenchmarkLoadChainsRetained(b *testing.B) {
	read := mapReader(map[string]string{"manifest.json": manifest("A"), "A.json": chainsTemplate(10000)})
	var before, after runtime.MemStats
	var retained uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		a, ds := load("cdkx.out", read, nil)
		if a == nil || ds.HasErrors() {
			b.Fatalf("load() = %v", lines(ds))
		}
		if ds := Validate(a, fakeCatalog{}); ds.HasErrors() {
			b.Fatalf("Validate() = %v", lines(ds))
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		retained = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(a)
		b.StartTimer()
	}
	b.ReportMetric(float64(retained), "retained-B")
}
