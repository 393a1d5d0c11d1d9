package core_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/adapters/core"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

var _ engine.Provider = (*core.Provider)(nil)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	p := core.New()
	ctx := t.Context()
	input := map[string]any{"a": []any{json.Number("1"), "x"}, "b": map[string]any{"c": true}}
	props := resource.Properties{"input": input, "triggersReplace": "v1"}

	created, err := p.Create(ctx, resource.CreateRequest{Type: core.TypeData, LogicalID: "D", Properties: props})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	if _, err := uuid.Parse(created.PhysicalID); err != nil {
		t.Errorf("PhysicalID %q is not a UUID: %v", created.PhysicalID, err)
	}
	want := resource.Properties{"output": input, "id": created.PhysicalID}
	if diff := cmp.Diff(want, created.Outputs); diff != "" {
		t.Errorf("Create outputs (-want +got):\n%s", diff)
	}
	// The output is the input itself, not a copy: property values are never changed in place.
	if got := created.Outputs["output"].(map[string]any); reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(input).UnsafePointer() {
		t.Errorf("output is a copy of the input, want the input shared")
	}

	again, err := p.Create(ctx, resource.CreateRequest{Type: core.TypeData, Properties: props})
	if err != nil || again.PhysicalID == created.PhysicalID {
		t.Errorf("second Create = %q, %v, want a new id", again.PhysicalID, err)
	}

	newProps := resource.Properties{"input": "v2", "triggersReplace": "v1"}
	updated, err := p.Update(ctx, resource.UpdateRequest{Type: core.TypeData, PhysicalID: created.PhysicalID,
		Old: props, New: newProps, OldOutputs: created.Outputs, Changed: []string{"input"}})
	if err != nil {
		t.Fatalf("Update = %v", err)
	}
	if diff := cmp.Diff(resource.Properties{"output": "v2", "id": created.PhysicalID}, updated.Outputs); diff != "" {
		t.Errorf("Update outputs (-want +got):\n%s", diff)
	}

	read, err := p.Read(ctx, resource.ReadRequest{Type: core.TypeData, PhysicalID: created.PhysicalID, Properties: newProps, Outputs: updated.Outputs})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(resource.ReadResult{Properties: newProps, Outputs: updated.Outputs}, read); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	read, err = p.Read(ctx, resource.ReadRequest{Type: core.TypeData, PhysicalID: created.PhysicalID, Properties: newProps})
	if err != nil {
		t.Fatalf("Read without outputs = %v", err)
	}
	if diff := cmp.Diff(updated.Outputs, read.Outputs); diff != "" {
		t.Errorf("Read without outputs recomputes them (-want +got):\n%s", diff)
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: core.TypeData}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("Read without id = %v, want resource.ErrNotFound", err)
	}
	if err := p.Delete(ctx, resource.DeleteRequest{Type: core.TypeData, PhysicalID: created.PhysicalID}); err != nil {
		t.Errorf("Delete = %v", err)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	s := core.New().Info().Schemas[0]
	if s.Type != core.TypeData || core.New().Info().Name != "cdkx" {
		t.Fatalf("schema %q of provider %q", s.Type, core.New().Info().Name)
	}
	if diff := cmp.Diff([]string{"triggersReplace"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	for _, attr := range []string{"output", "id", "crn"} {
		if !s.HasOutput(attr) {
			t.Errorf("no output %q", attr)
		}
	}
	if errs := s.Validate(resource.Properties{"input": []any{nil, json.Number("1.5")}, "triggersReplace": map[string]any{}}, nil); len(errs) != 0 {
		t.Errorf("Validate = %v, want no errors for any JSON", errs)
	}
	if errs := s.Validate(resource.Properties{"inputs": "x"}, nil); len(errs) != 1 || errs[0].Path != "inputs" {
		t.Errorf("Validate(unknown property) = %v, want one error at inputs", errs)
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	_, err := core.New().Create(t.Context(), resource.CreateRequest{Type: "Cdkx::Core::Other"})
	if err == nil || err.Error() != `cdkx: unknown resource type "Cdkx::Core::Other" (known: Cdkx::Core::Data)` {
		t.Errorf("Create error = %v", err)
	}
}

// BenchmarkCreate measures one create; a deploy of 10,000 Data resources spends 10,000 of these.
func BenchmarkCreate(b *testing.B) {
	p := core.New()
	req := resource.CreateRequest{Type: core.TypeData, LogicalID: "D",
		Properties: resource.Properties{"input": map[string]any{"name": "x", "n": json.Number("1"), "tags": []any{"a", "b"}}}}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Create(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
