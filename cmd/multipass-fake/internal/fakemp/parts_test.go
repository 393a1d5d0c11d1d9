package fakemp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseMemorySize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1234", 1234, true},
		{"1234B", 1234, true},
		{"512M", 512 << 20, true},
		{"512m", 512 << 20, true},
		{"2G", 2 << 30, true},
		{"42MiB", 42 << 20, true},
		{"1kb", 1024, true},
		{"0.5G", 1 << 29, true},
		{"1.5GiB", 3 << 29, true},
		{" 1G ", 1 << 30, true},
		{"1.5", 0, false},
		{"1CiG", 0, false},
		{"-1G", 0, false},
		{"1T", 0, false},
		{"G", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseMemorySize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMemorySize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && err.Error() != tt.in+strings.TrimSuffix(invalidMemory, "\n") {
			t.Errorf("parseMemorySize(%q) error = %q, want InvalidMemorySizeException's text", tt.in, err)
		}
	}
}

func TestNetDigest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Network
		wantErr string
	}{
		{in: "en0", want: Network{Name: "en0", Mode: "auto"}},
		{in: "name=en0", want: Network{Name: "en0", Mode: "auto"}},
		{in: "NAME=en0,MODE=Manual,mac=52:54:00:AB:cd:ef", want: Network{Name: "en0", Mode: "manual", MAC: "52:54:00:AB:cd:ef"}},
		{in: "name=en0,,", want: Network{Name: "en0", Mode: "auto"}},
		{in: "mode=auto", wantErr: "Bad network definition, need at least a 'name' field"},
		{in: "", wantErr: "Bad network definition, need at least a 'name' field"},
		{in: "name=en0,mode=x", wantErr: "Bad network mode 'x', need 'auto' or 'manual'"},
		{in: "name=en0,mac=zz", wantErr: "Invalid MAC address: zz"},
		{in: "name=en0,foo=1", wantErr: "Bad network field: foo"},
		{in: "name=a=b", wantErr: "Bad network field definition: name=a=b"},
	}
	for _, tt := range tests {
		got, err := netDigest(tt.in)
		if tt.wantErr != "" {
			var ve validationError
			if !errors.As(err, &ve) || err.Error() != tt.wantErr {
				t.Errorf("netDigest(%q) error = %v, want validation error %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("netDigest(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestValidHostname(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a": true, "dev": true, "dev-1": true, "Dev2": true,
		// tests/cli/cli_launch_test.py, test_launch_invalid_name
		"1nvalid-name": false, "invalid.name": false, "invalid$name": false, "invalid(name)": false, "invalid-name-": false,
		"": false, "dev_1": false,
	} {
		if got := validHostname(name); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEnvFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		vars    map[string]string
		want    Env
		wantErr string
	}{
		{name: "defaults", vars: map[string]string{}, want: Env{LaunchDuration: time.Second}},
		{name: "everything", vars: map[string]string{
			EnvDir: "/s", EnvNetworks: " en0, bridge ,", EnvLaunchSeconds: "0.05", EnvFailLaunch: "a,*",
			EnvDaemonDown: "1", EnvLog: "/l",
		}, want: Env{Dir: "/s", Networks: []string{"en0", "bridge"}, LaunchDuration: 50 * time.Millisecond,
			FailLaunch: []string{"a", "*"}, DaemonDown: true, LogPath: "/l"}},
		{name: "bad seconds", vars: map[string]string{EnvLaunchSeconds: "soon"}, wantErr: `MULTIPASS_FAKE_LAUNCH_SECONDS="soon"`},
		{name: "negative seconds", vars: map[string]string{EnvLaunchSeconds: "-1"}, wantErr: `MULTIPASS_FAKE_LAUNCH_SECONDS="-1"`},
		{name: "bad daemon down", vars: map[string]string{EnvDaemonDown: "yes"}, wantErr: `MULTIPASS_FAKE_DAEMON_DOWN="yes"`},
	}
	for _, tt := range tests {
		got, err := EnvFrom(func(k string) string { return tt.vars[k] })
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: EnvFrom error = %v, want one naming %s", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: EnvFrom error = %v", tt.name, err)
		}
		if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b func() time.Time) bool { return a == nil && b == nil })); d != "" {
			t.Errorf("%s: EnvFrom (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestAllocateIPv4 checks that addresses are private, stable per name in an empty state and never
// shared, even between names whose hashes collide.
func TestAllocateIPv4(t *testing.T) {
	t.Parallel()
	s := &store{Instances: map[string]*Instance{}}
	seen := map[string]string{}
	for i := range 600 {
		n := fmt.Sprintf("vm-%d", i)
		ip := s.allocateIPv4(n)
		if !strings.HasPrefix(ip, "10.85.") {
			t.Fatalf("allocateIPv4(%q) = %s, want 10.85.x.y", n, ip)
		}
		if other, dup := seen[ip]; dup {
			t.Fatalf("allocateIPv4(%q) = %s, already given to %s", n, ip, other)
		}
		seen[ip] = n
		s.Instances[n] = &Instance{Name: n, IPv4: ip}
	}
	empty := &store{Instances: map[string]*Instance{}}
	if a, b := empty.allocateIPv4("dev"), empty.allocateIPv4("dev"); a != b {
		t.Errorf("allocateIPv4(dev) = %s then %s, want the same", a, b)
	}
}

// infoOf returns the state and first address info reports for name.
func infoOf(t *testing.T, env Env, name string) (string, []string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), env, []string{"info", name, "--format", "json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("info %s = %d %s", name, code, errb.String())
	}
	var got struct {
		Info map[string]struct {
			State string   `json:"state"`
			IPv4  []string `json:"ipv4"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	return got.Info[name].State, got.Info[name].IPv4
}

// TestLaunchWaitsForTheReadyTime checks in a synctest bubble that launch returns exactly when the
// instance becomes Running, after MULTIPASS_FAKE_LAUNCH_SECONDS.
func TestLaunchWaitsForTheReadyTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		env := f.env()
		env.LaunchDuration = 30 * time.Second
		start := time.Now()
		r := run(t, env, "", "launch", "-n", "a")
		if r.code != 0 || r.stdout != launchOut("a")+launchEnd {
			t.Fatalf("launch = %d %q %q, want 0 and Launched: a", r.code, r.stdout, r.stderr)
		}
		if got := time.Since(start); got != 30*time.Second {
			t.Errorf("launch took %v, want 30s", got)
		}
		if st, ips := infoOf(t, env, "a"); st != StateRunning || len(ips) != 1 {
			t.Errorf("after launch: state %s, ipv4 %v; want Running with an address", st, ips)
		}
	})
}

// TestLaunchTimeout checks that --timeout ends the client with exit 5 and the real message while the
// instance goes on to become Running at its ready time.
func TestLaunchTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		env := f.env()
		env.LaunchDuration = 30 * time.Second
		start := time.Now()
		r := run(t, env, "", "launch", "-n", "a", "--timeout", "10")
		if r.code != ExitTimeout || r.stderr != "Timed out waiting for instance launch.\n" || r.stdout != spinnerOut("a") {
			t.Errorf("launch --timeout 10 = %d %q %q, want 5 and the timeout message", r.code, r.stdout, r.stderr)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("launch --timeout 10 took %v, want 10s", got)
		}
		if st, ips := infoOf(t, env, "a"); st != StateStarting || len(ips) != 0 {
			t.Errorf("at 10s: state %s, ipv4 %v; want Starting without an address", st, ips)
		}
		time.Sleep(20 * time.Second) // the bubble's clock: now exactly the ready time
		if st, ips := infoOf(t, env, "a"); st != StateRunning || len(ips) != 1 {
			t.Errorf("at 30s: state %s, ipv4 %v; want Running with an address", st, ips)
		}
	})
}

// TestLaunchAbandoned checks that an instance whose launching client stops waiting (its context ends,
// as when the process is killed) still becomes Running at the recorded ready time.
func TestLaunchAbandoned(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		env := f.env()
		env.LaunchDuration = 30 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		if code := Run(ctx, env, []string{"launch", "-n", "a"}, nil, &out, &errb); code != ExitCommandFail {
			t.Errorf("abandoned launch = %d %q, want 2", code, errb.String())
		}
		time.Sleep(25*time.Second - time.Nanosecond)
		if st, _ := infoOf(t, env, "a"); st != StateStarting {
			t.Errorf("just before the ready time: %s, want Starting", st)
		}
		time.Sleep(time.Nanosecond)
		if st, _ := infoOf(t, env, "a"); st != StateRunning {
			t.Errorf("at the ready time: %s, want Running", st)
		}
	})
}

// TestConcurrentLaunches launches many instances at once from goroutines: every launch succeeds once,
// the state keeps all of them, and their addresses differ.
func TestConcurrentLaunches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := f.env()
	const n = 16
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			var out, errb bytes.Buffer
			codes[i] = Run(context.Background(), env, []string{"launch", "-n", fmt.Sprintf("vm%d", i)}, nil, &out, &errb)
		})
	}
	wg.Wait()
	s := f.state(t)
	ips := map[string]bool{}
	for i := range n {
		if codes[i] != 0 {
			t.Errorf("launch vm%d = %d, want 0", i, codes[i])
		}
		in := s.Instances[fmt.Sprintf("vm%d", i)]
		if in == nil {
			t.Errorf("vm%d missing from the state", i)
			continue
		}
		if ips[in.IPv4] {
			t.Errorf("vm%d has %s, already taken", i, in.IPv4)
		}
		ips[in.IPv4] = true
	}
}
