package fakemp

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Instance states as multipass prints them (src/client/cli/formatter/format_utils.cpp,
// status_string_for). The fake's instances are only ever Starting, Running or Deleted.
const (
	StateStarting = "Starting"
	StateRunning  = "Running"
	StateDeleted  = "Deleted"
)

// Instance is one instance in the fake's state file, as launched: what `multipass launch` asked for and
// when it becomes Running. Its state is never stored; State computes it from ReadyAt whenever the file
// is read, so an instance whose launching client was killed still becomes Running, as with the real
// daemon, which goes on launching.
type Instance struct {
	Name string `json:"name"`
	// Image is the image argument as given ("jammy", "22.04", "release:noble", a URL), "" for the default.
	Image string `json:"image"`
	// ImageRelease ("24.04 LTS") and Release ("Ubuntu 24.04.3 LTS") are info's image_release and release.
	ImageRelease string `json:"imageRelease"`
	Release      string `json:"release"`
	ImageHash    string `json:"imageHash"`
	CPUs         int    `json:"cpus"`
	// MemoryBytes and DiskBytes are the allocated sizes in bytes (--memory, --disk or the defaults).
	MemoryBytes int64     `json:"memoryBytes"`
	DiskBytes   int64     `json:"diskBytes"`
	Networks    []Network `json:"networks,omitempty"`
	// Mounts are added by the launching client once the instance runs, as `multipass launch --mount`
	// does by running `multipass mount` after the launch.
	Mounts []Mount `json:"mounts,omitempty"`
	// CloudInit is the user data given with --cloud-init (a file's contents, stdin's, or a URL).
	CloudInit string `json:"cloudInit,omitempty"`
	// IPv4 is reserved at launch and shown once the instance is Running.
	IPv4       string    `json:"ipv4"`
	LaunchedAt time.Time `json:"launchedAt"`
	ReadyAt    time.Time `json:"readyAt"`
	Deleted    bool      `json:"deleted,omitempty"`
}

// Network is one extra interface of an instance (--network name=…,mode=…,mac=…, or --bridged).
type Network struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	MAC  string `json:"mac,omitempty"`
}

// Mount is a host folder mounted in an instance: Source is absolute, Target the clean path in the guest.
type Mount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// State is the instance's state at now: Deleted once deleted (until purged), Starting until its ready
// time, then Running.
func (in *Instance) State(now time.Time) string {
	switch {
	case in.Deleted:
		return StateDeleted
	case now.Before(in.ReadyAt):
		return StateStarting
	default:
		return StateRunning
	}
}

// store is the fake's state: every instance by name, in a JSON file of the state folder.
type store struct {
	Instances map[string]*Instance `json:"instances"`
}

const (
	stateFileName = "state.json"
	lockFileName  = "state.lock"
)

// sortedNames returns the instances' names in lexical order (multipass lists them sorted).
func (s *store) sortedNames() []string {
	names := make([]string, 0, len(s.Instances))
	for n := range s.Instances {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// update runs fn on the state of dir under an exclusive flock of dir's lock file and, if fn returns
// nil and changed is true, writes the state back atomically (a temporary file renamed over the old
// one), so that concurrent invocations of the fake never lose each other's changes. The folder is
// created if missing.
func update(dir string, fn func(s *store) (changed bool, err error)) error {
	if dir == "" {
		return errors.New("MULTIPASS_FAKE_DIR is not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("locking %s: %w", lf.Name(), err)
	}
	defer func() { _ = unlockFile(lf) }()
	s, err := readStore(dir)
	if err != nil {
		return err
	}
	changed, err := fn(s)
	if err != nil || !changed {
		return err
	}
	return writeStore(dir, s)
}

func readStore(dir string) (*store, error) {
	s := &store{Instances: map[string]*Instance{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", filepath.Join(dir, stateFileName), err)
	}
	if s.Instances == nil {
		s.Instances = map[string]*Instance{}
	}
	return s, nil
}

func writeStore(dir string, s *store) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFileName+".*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, stateFileName)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// allocateIPv4 returns an address in 10.85.0.0/16 (Multipass's QEMU bridge hands out 10.x addresses)
// derived from name, probing onward past addresses that other instances (deleted ones too, until
// purged) hold: the same name gets the same address in an empty state, and no two instances share one.
func (s *store) allocateIPv4(name string) string {
	used := map[string]bool{}
	for _, in := range s.Instances {
		used[in.IPv4] = true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	const hosts = 65534 - 2 // 10.85.0.2 … 10.85.255.254, skipping .0, .1 and .255 of each /24 below
	start := h.Sum32() % hosts
	for i := uint32(0); i < hosts; i++ {
		n := (start+i)%hosts + 2
		a, b := n/256, n%256
		if b == 0 || b == 1 || b == 255 {
			continue
		}
		ip := fmt.Sprintf("10.85.%d.%d", a, b)
		if !used[ip] {
			return ip
		}
	}
	return "10.86.0.2" // 64 thousand instances on a developer's machine: never reached
}
