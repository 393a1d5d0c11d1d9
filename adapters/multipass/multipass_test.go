package multipass_test

import (
	"context"
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/multipass"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

var _ engine.Provider = (*multipass.Provider)(nil)

func TestInfo(t *testing.T) {
	t.Parallel()
	info := (&multipass.Provider{}).Info()
	if info.Name != "multipass" || info.DefaultConcurrency != 2 || !info.CanLocate || len(info.Schemas) != 1 {
		t.Fatalf("Info = %+v, want multipass, concurrency 2, CanLocate, one schema", info)
	}
	s := info.Schemas[0]
	if s.Type != multipass.TypeInstance || !s.DeleteBeforeReplace || s.ReplaceNote == "" || !cmp.Equal(s.Identity, []string{"name"}) {
		t.Errorf("schema = %+v, want %s, DeleteBeforeReplace, a ReplaceNote, Identity [name]", s, multipass.TypeInstance)
	}
	want := []string{"bridged", "cloudInit", "cpus", "disk", "image", "memory", "mounts", "name", "networks", "timeout"}
	if diff := cmp.Diff(want, s.CreateOnly()); diff != "" {
		t.Errorf("create-only properties (-want +got):\n%s", diff)
	}
	for _, o := range []string{"name", "ipAddress", "sshUser", "crn"} {
		if !s.HasOutput(o) {
			t.Errorf("output %q missing", o)
		}
	}
}

// TestNewFromEnv: the binary is MULTIPASS_BIN, or multipass on PATH; it shows in the error of a binary
// that cannot be found.
func TestNewFromEnv(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "multipass-fake")
	for _, tc := range []struct{ env, want string }{{"", "multipass"}, {missing, missing}} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(tc.want); err == nil {
				t.Skipf("%s exists on this machine", tc.want)
			}
			p, err := multipass.NewFromEnv(func(k string) string {
				if k != "MULTIPASS_BIN" {
					t.Errorf("getenv(%q), want only MULTIPASS_BIN", k)
				}
				return tc.env
			})
			if err != nil {
				t.Fatalf("NewFromEnv = %v", err)
			}
			_, err = p.Read(t.Context(), resource.ReadRequest{Type: multipass.TypeInstance, PhysicalID: "dev"})
			var mb *multipass.MissingBinaryError
			if !errors.As(err, &mb) || mb.Bin != tc.want {
				t.Errorf("MULTIPASS_BIN=%q: Read = %v, want a *MissingBinaryError for %q", tc.env, err, tc.want)
			}
		})
	}
}

// TestLaunchArgs: every property reaches the launch command line in launch.cpp's forms, inline user data
// goes on stdin with --cloud-init -, a path as it is.
func TestLaunchArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, props string
		args, stdin string
	}{
		{"name only", `{"name":"dev"}`, "launch --name dev", ""},
		{"every property", `{"name":"dev","image":"jammy","cpus":2,"memory":"2G","disk":"20G","bridged":true,"timeout":600,
			"cloudInit":"/run/cdkx/assets/asset.bc66/cloud-init.yaml",
			"networks":[{"name":"en0","mode":"manual","mac":"52:54:00:12:34:56"},{"name":"bridge0"}],
			"mounts":[{"source":"/Users/me/code","target":"/home/ubuntu/code"},{"source":"/Users/me/.ssh"}]}`,
			"launch --name dev --cpus 2 --memory 2G --disk 20G --bridged --timeout 600 --cloud-init /run/cdkx/assets/asset.bc66/cloud-init.yaml " +
				"--network name=en0,mode=manual,mac=52:54:00:12:34:56 --network name=bridge0 " +
				"--mount /Users/me/code:/home/ubuntu/code --mount /Users/me/.ssh jammy", ""},
		{"network mode only", `{"name":"dev","networks":[{"name":"en0","mode":"auto"}]}`, "launch --name dev --network name=en0,mode=auto", ""},
		{"inline cloud-config", `{"name":"dev","cloudInit":"#cloud-config\npackages: [git]\n"}`, "launch --name dev --cloud-init -", "#cloud-config\npackages: [git]\n"},
		{"inline script", `{"name":"dev","cloudInit":"#!/bin/sh\necho hi"}`, "launch --name dev --cloud-init -", "#!/bin/sh\necho hi"},
		{"inline without #", `{"name":"dev","cloudInit":"packages:\n  - git"}`, "launch --name dev --cloud-init -", "packages:\n  - git"},
		{"bridged false", `{"name":"dev","bridged":false,"image":"22.04"}`, "launch --name dev 22.04", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				_, p := newScript(t, step{Args: tc.args, Stdin: tc.stdin}, info("dev", "info-running.json"))
				res, err := p.Create(t.Context(), resource.CreateRequest{Type: multipass.TypeInstance, Properties: adaptertest.Props(t, tc.props)})
				if err != nil {
					t.Fatalf("Create = %v", err)
				}
				if res.PhysicalID != "dev" {
					t.Errorf("PhysicalID = %q, want dev", res.PhysicalID)
				}
			})
		})
	}
}

// TestCreateWaits: after the launch, info is polled every PollInterval until the instance is Running
// with an IPv4 address; its outputs carry the first address.
func TestCreateWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, p := newScript(t, step{Args: "launch --name dev"},
			info("dev", "info-starting.json"), info("dev", "info-starting.json"), info("dev", "info-bridged.json"))
		start := time.Now()
		res, err := p.Create(t.Context(), resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
		if err != nil {
			t.Fatalf("Create = %v", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Create took %v, want 2s (two polls of 1s)", took)
		}
		want := resource.CreateResult{PhysicalID: "dev", Outputs: resource.Properties{"name": "dev", "ipAddress": "10.105.190.7",
			"sshUser": "ubuntu", "crn": "crn:cdkx:multipass:compute:instance/dev"}}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("Create (-want +got):\n%s", diff)
		}
	})
}

// TestCreateTimeout: an instance that does not run within its timeout fails the create, which names it
// so that state keeps it for deletion.
func TestCreateTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		steps := []step{{Args: "launch --name dev --timeout 3"}}
		for range 4 { // at 0, 1, 2 and 3 s
			steps = append(steps, info("dev", "info-starting.json"))
		}
		_, p := newScript(t, steps...)
		start := time.Now()
		res, err := p.Create(t.Context(), resource.CreateRequest{Type: multipass.TypeInstance, Properties: adaptertest.Props(t, `{"name":"dev","timeout":3}`)})
		if err == nil || !strings.Contains(err.Error(), `state "Starting"`) || !strings.Contains(err.Error(), "raise its timeout") {
			t.Fatalf("Create = %v, want a timeout naming the state", err)
		}
		if res.PhysicalID != "dev" {
			t.Errorf("PhysicalID = %q, want dev (the instance exists)", res.PhysicalID)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("Create took %v, want the timeout, 3s", took)
		}
	})
}

// TestCreateDefaultTimeout: without a timeout property the wait ends after DefaultTimeout.
func TestCreateDefaultTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		steps := []step{{Args: "launch --name dev"}}
		for range 301 {
			steps = append(steps, info("dev", "info-stopped.json"))
		}
		_, p := newScript(t, steps...)
		start := time.Now()
		res, err := p.Create(t.Context(), resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
		if err == nil || res.PhysicalID != "dev" {
			t.Fatalf("Create = %+v, %v; want an error naming dev", res, err)
		}
		if took := time.Since(start); took != multipass.DefaultTimeout {
			t.Errorf("Create took %v, want %v", took, multipass.DefaultTimeout)
		}
	})
}

// TestCreateCancelled: the wait ends with the context; the instance exists, so the create names it.
func TestCreateCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		_, p := newScript(t, step{Args: "launch --name dev"}, info("dev", "info-starting.json"), info("dev", "info-starting.json"))
		time.AfterFunc(1500*time.Millisecond, cancel)
		res, err := p.Create(ctx, resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
		if !errors.Is(err, context.Canceled) || res.PhysicalID != "dev" {
			t.Fatalf("Create = %+v, %v; want context.Canceled naming dev", res, err)
		}
	})
}

// TestCreateWaitInterrupted: an interrupt of the run (resource.WithInterrupt, the context itself not
// cancelled) ends the wait for a launched instance: the outcome is unknown (the engine locates it and,
// in an interrupted run, leaves it pending), and nothing is named for deletion.
func TestCreateWaitInterrupted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		interrupted := make(chan struct{})
		ctx := resource.WithInterrupt(t.Context(), interrupted)
		_, p := newScript(t, step{Args: "launch --name dev"}, info("dev", "info-starting.json"), info("dev", "info-starting.json"),
			info("dev", "info-starting.json")) // the last for Locate, which finds it still starting
		time.AfterFunc(1500*time.Millisecond, func() { close(interrupted) })
		res, err := p.Create(ctx, resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
		if !errors.Is(err, resource.ErrOutcomeUnknown) || !errors.Is(err, resource.ErrInterrupted) || res.PhysicalID != "" {
			t.Fatalf("Create = %+v, %v; want an unknown outcome of an interrupted run, no physical ID", res, err)
		}
		if _, err := p.Locate(ctx, resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}}); !errors.Is(err, resource.ErrInterrupted) {
			t.Errorf("Locate of the starting instance in the interrupted run = %v, want it left for the next deploy", err)
		}
	})
}

// TestCreateLaunchInterrupted: a launch cut short by the context may go on in the daemon: its outcome is
// unknown, and the engine locates the instance.
func TestCreateLaunchInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, p := newScript(t, step{Args: "launch --name dev", Err: context.Canceled})
	res, err := p.Create(ctx, resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
	if !errors.Is(err, resource.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || res.PhysicalID != "" {
		t.Fatalf("Create = %+v, %v; want ErrOutcomeUnknown and context.Canceled", res, err)
	}
}

// TestCreateFails: how a failed launch is reported, and whether the instance it left is named.
func TestCreateFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		steps  []step
		kind   error  // wanted in the chain; nil: none checked
		id     string // the PhysicalID of the result
		inText string
	}{
		{"name taken", []step{{Args: "launch --name dev", Code: 2, Stderr: "launch failed: instance \"dev\" already exists\n"}},
			resource.ErrAlreadyExists, "", "multipass purge"},
		{"refused before the daemon", []step{
			{Args: "launch --name dev", Code: 1, Stderr: "Mount source path \"/nope\" does not exist\n"},
			infoMissing("dev")},
			nil, "", `Mount source path "/nope" does not exist`},
		{"mount failed after the VM started", []step{
			{Args: "launch --name dev", Code: 2, Stderr: "mount failed: source \"/x\" is not readable\n"},
			info("dev", "info-running.json")},
			nil, "dev", "mount failed"},
		{"launch timed out", []step{
			{Args: "launch --name dev", Code: 5, Stderr: "Timed out waiting for instance launch.\n"},
			info("dev", "info-starting.json")},
			multipass.ErrTimeout, "dev", "Timed out"},
		{"state unknown after the failure", []step{
			{Args: "launch --name dev", Code: 2, Stderr: "launch failed: something\n"},
			{Args: "info dev --format json", Code: 2, Stderr: "info failed: something else\n"}},
			nil, "dev", "launch failed: something"},
		{"daemon down", []step{{Args: "launch --name dev", Code: 3, Stderr: "launch failed: cannot connect to the multipass socket\n"}},
			resource.ErrUnreachable, "", "cannot connect"},
		{"missing binary", []step{{Args: "launch --name dev", Err: &fs.PathError{Op: "fork/exec", Path: "/opt/mp/multipass", Err: fs.ErrNotExist}}},
			nil, "", "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, tc.steps...)
			res, err := p.Create(t.Context(), resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev"}})
			if err == nil {
				t.Fatal("Create succeeded, want an error")
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("Create = %v, want it to match %v", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.inText) {
				t.Errorf("Create = %v, want it to say %q", err, tc.inText)
			}
			if res.PhysicalID != tc.id {
				t.Errorf("PhysicalID = %q, want %q", res.PhysicalID, tc.id)
			}
		})
	}
}

// TestRead: properties are the recorded ones, outputs the live ones; a missing or deleted instance is
// resource.ErrNotFound.
func TestRead(t *testing.T) {
	t.Parallel()
	recorded := resource.Properties{"name": "dev", "memory": "2G", "image": "jammy"}
	for _, tc := range []struct {
		name     string
		answer   step
		outputs  resource.Properties
		recorded resource.Properties // recorded outputs
		notFound bool
	}{
		{"running", info("dev", "info-running.json"), outputs("192.168.64.5"), nil, false},
		{"stopped keeps the recorded address", info("dev", "info-stopped.json"), outputs("192.168.64.5"), outputs("192.168.64.5"), false},
		{"starting without a record", info("dev", "info-starting.json"), outputs(""), nil, false},
		{"missing", infoMissing("dev"), nil, nil, true},
		{"deleted", info("dev", "info-deleted.json"), nil, nil, true},
		{"not listed", info("dev", "info-other.json"), nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, tc.answer)
			got, err := p.Read(t.Context(), resource.ReadRequest{Type: multipass.TypeInstance, PhysicalID: "dev", Properties: recorded, Outputs: tc.recorded})
			if tc.notFound {
				if !errors.Is(err, resource.ErrNotFound) {
					t.Fatalf("Read = %v, want resource.ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			want := resource.ReadResult{Properties: recorded, Outputs: tc.outputs}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

func outputs(ip string) resource.Properties {
	return resource.Properties{"name": "dev", "ipAddress": ip, "sshUser": "ubuntu", "crn": "crn:cdkx:multipass:compute:instance/dev"}
}

// TestReadBadJSON: output that is not info's JSON is an error quoting it, sanitized.
func TestReadBadJSON(t *testing.T) {
	t.Parallel()
	_, p := newScript(t, step{Args: "info dev --format json", Stdout: "Name: dev\x1b[31m\nState: Running\n"})
	_, err := p.Read(t.Context(), resource.ReadRequest{Type: multipass.TypeInstance, PhysicalID: "dev"})
	if err == nil || !strings.Contains(err.Error(), `Name: dev\x1b[31m`) || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("Read = %q, want the output quoted and sanitized", err)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answer  step
		wantErr bool
	}{
		{"deleted", step{Args: "delete --purge dev"}, false},
		{"already gone", step{Args: "delete --purge dev", Code: 2, Stderr: "delete failed: instance \"dev\" does not exist\n"}, false},
		{"daemon down", step{Args: "delete --purge dev", Code: 3, Stderr: "delete failed: cannot connect to the multipass socket\n"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, tc.answer)
			err := p.Delete(t.Context(), resource.DeleteRequest{Type: multipass.TypeInstance, PhysicalID: "dev"})
			if (err != nil) != tc.wantErr {
				t.Errorf("Delete = %v, want an error: %t", err, tc.wantErr)
			}
		})
	}
}

// TestLocate: the instance of an interrupted launch is found by its name; one still starting is waited
// for; one missing or deleted is resource.ErrNotFound.
func TestLocate(t *testing.T) {
	t.Parallel()
	req := resource.CreateRequest{Type: multipass.TypeInstance, Properties: resource.Properties{"name": "dev", "image": "jammy"}}
	t.Run("running", func(t *testing.T) {
		t.Parallel()
		_, p := newScript(t, info("dev", "info-running.json"))
		if id, err := p.Locate(t.Context(), req); err != nil || id != "dev" {
			t.Errorf("Locate = %q, %v; want dev", id, err)
		}
	})
	t.Run("starting", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			_, p := newScript(t, info("dev", "info-starting.json"), info("dev", "info-starting.json"), info("dev", "info-running.json"))
			if id, err := p.Locate(t.Context(), req); err != nil || id != "dev" {
				t.Errorf("Locate = %q, %v; want dev", id, err)
			}
		})
	})
	for _, tc := range []struct {
		name   string
		answer step
	}{{"missing", infoMissing("dev")}, {"deleted", info("dev", "info-deleted.json")}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, tc.answer)
			if _, err := p.Locate(t.Context(), req); !errors.Is(err, resource.ErrNotFound) {
				t.Errorf("Locate = %v, want resource.ErrNotFound", err)
			}
		})
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	_, p := newScript(t)
	if _, err := p.Create(t.Context(), resource.CreateRequest{Type: "Multipass::Compute::Network"}); err == nil {
		t.Error("Create of an unknown type succeeded")
	}
	if _, err := p.Update(t.Context(), resource.UpdateRequest{Type: multipass.TypeInstance}); err == nil {
		t.Error("Update succeeded, want an error (every property is create-only)")
	}
}
