package kit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// fake is a provider whose objects are the keys of a map: a physical ID is the property "name".
type fake struct {
	objects map[string]bool
	calls   []string
}

func (f *fake) create(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	f.calls = append(f.calls, "create "+req.Type)
	return resource.CreateResult{PhysicalID: "id"}, nil
}

func (f *fake) read(_ context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	f.calls = append(f.calls, "read "+req.Type+" "+req.PhysicalID)
	if !f.objects[req.PhysicalID] {
		return resource.ReadResult{}, fmt.Errorf("fake: %s: %w", req.PhysicalID, resource.ErrNotFound)
	}
	return resource.ReadResult{}, nil
}

func (f *fake) update(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	f.calls = append(f.calls, "update "+req.Type)
	return resource.UpdateResult{}, nil
}

func (f *fake) delete(_ context.Context, req resource.DeleteRequest) error {
	f.calls = append(f.calls, "delete "+req.Type+" "+req.PhysicalID)
	if !f.objects[req.PhysicalID] {
		return fmt.Errorf("fake: %s: %w", req.PhysicalID, resource.ErrNotFound)
	}
	if req.PhysicalID == "stuck" {
		return errors.New("fake: stuck")
	}
	return nil
}

func (f *fake) locate(_ context.Context, req resource.CreateRequest) (string, error) {
	f.calls = append(f.calls, "locate "+req.Type)
	return "found", nil
}

func nameID(props resource.Properties) (string, error) {
	s, ok := props["name"].(string)
	if !ok {
		return "", errors.New("fake: no name")
	}
	return s, nil
}

// table has three types: Z with every call, A named by its inputs and without Update, M that cannot
// locate.
func table() *kit.Table[*fake] {
	return kit.New(resource.ProviderInfo{Name: "fake", CanLocate: true},
		kit.Type[*fake]{Schema: resource.Schema{Type: "Fake::Z"}, Create: (*fake).create, Read: (*fake).read,
			Update: (*fake).update, Delete: (*fake).delete, Locate: (*fake).locate},
		kit.Type[*fake]{Schema: resource.Schema{Type: "Fake::A"}, Create: (*fake).create, Read: (*fake).read,
			Delete: (*fake).delete, ID: nameID},
		kit.Type[*fake]{Schema: resource.Schema{Type: "Fake::M"}, Create: (*fake).create, Read: (*fake).read,
			Delete: (*fake).delete},
	)
}

func TestInfoListsTheSchemasInTheTableOrder(t *testing.T) {
	info := table().Info()
	var got []string
	for _, s := range info.Schemas {
		got = append(got, s.Type)
	}
	if diff := cmp.Diff([]string{"Fake::Z", "Fake::A", "Fake::M"}, got); diff != "" {
		t.Errorf("Info().Schemas (-want +got):\n%s", diff)
	}
	if info.Name != "fake" || !info.CanLocate {
		t.Errorf("Info() = %+v, want the declared name and CanLocate", info)
	}
}

func TestZeroDispatchSaysSo(t *testing.T) {
	var d kit.Dispatch[*fake]
	_, err := d.Create(context.Background(), resource.CreateRequest{Type: "Fake::Z"})
	const want = "*kit_test.fake was not made by its constructor (New)"
	if err == nil || err.Error() != want {
		t.Errorf("Create error = %v, want %s", err, want)
	}
}

func TestUnknownTypeListsTheKnownOnes(t *testing.T) {
	const want = `fake: unknown resource type "Fake::X" (known: Fake::Z, Fake::A, Fake::M)`
	tab, f, ctx := table(), &fake{}, context.Background()
	errs := map[string]error{}
	_, errs["Create"] = tab.For(f).Create(ctx, resource.CreateRequest{Type: "Fake::X"})
	_, errs["Read"] = tab.For(f).Read(ctx, resource.ReadRequest{Type: "Fake::X"})
	_, errs["Update"] = tab.For(f).Update(ctx, resource.UpdateRequest{Type: "Fake::X"})
	errs["Delete"] = tab.For(f).Delete(ctx, resource.DeleteRequest{Type: "Fake::X"})
	_, errs["Locate"] = tab.For(f).Locate(ctx, resource.CreateRequest{Type: "Fake::X"})
	for call, err := range errs {
		if err == nil || err.Error() != want {
			t.Errorf("%s error = %v, want %s", call, err, want)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("calls = %q, want none", f.calls)
	}
}

func TestCallsRouteByType(t *testing.T) {
	tab, f, ctx := table(), &fake{objects: map[string]bool{"x": true}}, context.Background()
	for _, err := range []error{
		second(tab.For(f).Create(ctx, resource.CreateRequest{Type: "Fake::A"})),
		second(tab.For(f).Read(ctx, resource.ReadRequest{Type: "Fake::M", PhysicalID: "x"})),
		second(tab.For(f).Update(ctx, resource.UpdateRequest{Type: "Fake::Z"})),
		tab.For(f).Delete(ctx, resource.DeleteRequest{Type: "Fake::Z", PhysicalID: "x"}),
		second(tab.For(f).Locate(ctx, resource.CreateRequest{Type: "Fake::Z"})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"create Fake::A", "read Fake::M x", "update Fake::Z", "delete Fake::Z x", "locate Fake::Z"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func second[T any](_ T, err error) error { return err }

func TestUpdateWithoutUpdateNamesTheChange(t *testing.T) {
	f := &fake{}
	_, err := table().For(f).Update(context.Background(), resource.UpdateRequest{Type: "Fake::A", Changed: []string{"size", "zone"}})
	const want = "fake: Fake::A cannot change in place (changed: size, zone); every property is create-only"
	if err == nil || err.Error() != want {
		t.Errorf("Update error = %v, want %s", err, want)
	}
}

func TestDeleteOfAnObjectGoneIsSuccess(t *testing.T) {
	tab, f, ctx := table(), &fake{objects: map[string]bool{"stuck": true}}, context.Background()
	if err := tab.For(f).Delete(ctx, resource.DeleteRequest{Type: "Fake::Z", PhysicalID: "gone"}); err != nil {
		t.Errorf("Delete of a gone object = %v, want nil", err)
	}
	if err := tab.For(f).Delete(ctx, resource.DeleteRequest{Type: "Fake::Z", PhysicalID: "stuck"}); err == nil || err.Error() != "fake: stuck" {
		t.Errorf("Delete of a stuck object = %v, want fake: stuck", err)
	}
}

func TestLocate(t *testing.T) {
	tests := []struct {
		name    string
		typ     string
		props   resource.Properties
		want    string
		wantErr error  // matched with errors.Is
		msg     string // the whole error, when wantErr is nil
	}{
		{name: "by ID, found", typ: "Fake::A", props: resource.Properties{"name": "x"}, want: "x"},
		{name: "by ID, gone", typ: "Fake::A", props: resource.Properties{"name": "y"}, wantErr: resource.ErrNotFound},
		{name: "by ID, no ID", typ: "Fake::A", props: resource.Properties{}, msg: "fake: no name"},
		{name: "cannot", typ: "Fake::M", props: resource.Properties{"name": "x"}, wantErr: resource.ErrCannotLocate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{objects: map[string]bool{"x": true}}
			got, err := table().For(f).Locate(context.Background(), resource.CreateRequest{Type: tt.typ, Properties: tt.props})
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || got != "" {
					t.Errorf("Locate = %q, %v; want an error wrapping %v", got, err, tt.wantErr)
				}
			case tt.msg != "":
				if err == nil || err.Error() != tt.msg {
					t.Errorf("Locate = %q, %v; want error %s", got, err, tt.msg)
				}
			case err != nil || got != tt.want:
				t.Errorf("Locate = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLocateByIDSaysWhatItLookedFor(t *testing.T) {
	_, err := table().For(&fake{}).Locate(context.Background(), resource.CreateRequest{Type: "Fake::A", Properties: resource.Properties{"name": "y"}})
	const want = "locate Fake::A y: fake: y: object not found"
	if err == nil || err.Error() != want {
		t.Errorf("Locate error = %v, want %s", err, want)
	}
}

func TestNewRefusesABrokenTable(t *testing.T) {
	tests := []struct {
		name  string
		types []kit.Type[*fake]
		want  string
	}{
		{"twice", []kit.Type[*fake]{
			{Schema: resource.Schema{Type: "Fake::A"}, Create: (*fake).create, Read: (*fake).read, Delete: (*fake).delete},
			{Schema: resource.Schema{Type: "Fake::A"}, Create: (*fake).create, Read: (*fake).read, Delete: (*fake).delete},
		}, "fake: type Fake::A is listed twice"},
		{"no delete", []kit.Type[*fake]{
			{Schema: resource.Schema{Type: "Fake::A"}, Create: (*fake).create, Read: (*fake).read},
		}, "fake: type Fake::A lacks Create, Read or Delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tt.want {
					t.Errorf("New panicked with %v, want %q", got, tt.want)
				}
			}()
			kit.New(resource.ProviderInfo{Name: "fake"}, tt.types...)
		})
	}
}

func TestKnown(t *testing.T) {
	token := map[string]any{"ref": "A"}
	isToken := adaptertest.IsToken
	tests := []struct {
		name    string
		v       any
		unknown resource.IsUnknownFunc
		known   any
		str     string
		isStr   bool
	}{
		{"string", "a", isToken, "a", "a", true},
		{"number", 1.5, isToken, 1.5, "", false},
		{"nil", nil, isToken, nil, "", false},
		{"token", token, isToken, nil, "", false},
		{"resource.Unknown", resource.Unknown{}, isToken, nil, "", false},
		{"resource.Unknown without a check", resource.Unknown{}, nil, nil, "", false},
		{"object without a check", token, nil, token, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kit.Known(tt.v, tt.unknown); !cmp.Equal(got, tt.known) {
				t.Errorf("Known(%v) = %v, want %v", tt.v, got, tt.known)
			}
			if got := kit.IsUnknown(tt.v, tt.unknown); got != (tt.v != nil && tt.known == nil) {
				t.Errorf("IsUnknown(%v) = %v", tt.v, got)
			}
			if s, ok := kit.KnownString(tt.v, tt.unknown); s != tt.str || ok != tt.isStr {
				t.Errorf("KnownString(%v) = %q, %v; want %q, %v", tt.v, s, ok, tt.str, tt.isStr)
			}
		})
	}
}
