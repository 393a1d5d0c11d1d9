package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/core"
	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// chains returns a stack of n resources in chains of depth 10 (each reads the id of the one before it),
// whose values end in suffix: the shape of go run ./bench.
func chains(n int, suffix string) *assembly.Assembly {
	const depth = 10
	st := &assembly.Stack{ID: "Bench", Outputs: map[string]*assembly.Output{}}
	for c := range n / depth {
		for d := range depth {
			id := fmt.Sprintf("C%04dD%02d", c, d)
			var value any = "v" + suffix
			if d > 0 {
				value = []any{"v" + suffix, map[string]any{"ref": fmt.Sprintf("C%04dD%02d", c, d-1), "attr": "id"}}
			}
			st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake",
				Properties: map[string]any{"key": id, "value": value}, Path: "resources." + id})
		}
	}
	return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
}

// deployBench plans a against b's state and deploys it at concurrency 10, failing b on any error.
func deployBench(b *testing.B, a *assembly.Assembly, be state.Backend, reg *engine.Registry) {
	b.Helper()
	ctx := context.Background()
	cur, err := be.GetStack(ctx, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"Bench"}, State: map[string]*state.Stack{"Bench": cur},
		Schemas: reg.Schema})
	if ds.HasErrors() {
		b.Fatal(ds.Err())
	}
	res, err := engine.Deploy(ctx, p, engine.Options{Backend: be, Providers: reg, Concurrency: 10})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeploy measures deploys of 1,000 resources against a provider that answers at once, on SQLite
// state: creating them all, then updating them all, then destroying them. Each op is one whole run.
func BenchmarkDeploy(b *testing.B) {
	const n = 1000
	open := func(b *testing.B) state.Backend {
		b.Helper()
		be, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = be.Close() })
		return be
	}
	first, second := chains(n, "1"), chains(n, "2")
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			be, reg := open(b), engine.NewRegistry(enginetest.NewCloud())
			b.StartTimer()
			deployBench(b, first, be, reg)
		}
	})
	b.Run("update", func(b *testing.B) {
		be, reg := open(b), engine.NewRegistry(enginetest.NewCloud())
		deployBench(b, first, be, reg)
		next := []*assembly.Assembly{second, first}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			deployBench(b, next[i%2], be, reg)
			i++
		}
	})
	b.Run("destroy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			be, reg := open(b), engine.NewRegistry(enginetest.NewCloud())
			deployBench(b, first, be, reg)
			st, err := be.GetStack(context.Background(), "Bench")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := engine.Destroy(context.Background(), []*state.Stack{st}, engine.Options{Backend: be, Providers: reg, Concurrency: 10})
			if err == nil {
				err = res.Err()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// dataChains returns a stack of n Cdkx::Core::Data in chains of depth 10, each one's input reading the id
// of the one before it: the resources of go run ./bench.
func dataChains(n int) *assembly.Assembly {
	const depth = 10
	st := &assembly.Stack{ID: "Bench", Outputs: map[string]*assembly.Output{}}
	for c := range n / depth {
		for d := range depth {
			id := fmt.Sprintf("Chain%dNode%d%08X", c, d, c*depth+d)
			input := map[string]any{"chain": json.Number(strconv.Itoa(c)), "depth": json.Number(strconv.Itoa(d)), "payload": "value-" + id}
			if d > 0 {
				input["previous"] = map[string]any{"ref": fmt.Sprintf("Chain%dNode%d%08X", c, d-1, c*depth+d-1), "attr": "id"}
			}
			st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: core.TypeData, Provider: core.Name,
				Properties: map[string]any{"input": input}, Path: "resources." + id})
		}
	}
	return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
}

// BenchmarkDeployData measures first deploys of 10,000 Cdkx::Core::Data (objects that live only in state:
// no slot, no pending record) on SQLite state, the engine's share of go run ./bench's 100k deploy: as
// cdkx deploy runs it, with its deployment recorded and claimed by the caller (operation.Record).
func BenchmarkDeployData(b *testing.B) {
	a := dataChains(10_000)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		be, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		reg := engine.NewRegistry(core.New())
		now := time.Now().UTC()
		d := &state.Deployment{ID: fmt.Sprintf("bench-%d", i), Stack: "Bench", Kind: state.KindDeploy, Status: state.StatusPending, CreatedAt: now}
		if err := be.CreateDeployments(ctx, []*state.Deployment{d}); err != nil {
			b.Fatal(err)
		}
		if err := be.ClaimDeployments(ctx, []string{d.ID}, "bench", now); err != nil {
			b.Fatal(err)
		}
		d.Status, d.StartedAt = state.StatusRunning, now
		p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"Bench"}, State: map[string]*state.Stack{"Bench": state.NewStack("Bench")},
			Schemas: reg.Schema})
		if ds.HasErrors() {
			b.Fatal(ds.Err())
		}
		b.StartTimer()
		res, err := engine.Deploy(ctx, p, engine.Options{Backend: be, Providers: reg, Concurrency: 10,
			Deployments: map[string]*state.Deployment{"Bench": d}})
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = be.Close()
		b.StartTimer()
	}
}
