// Command bench measures cdkx deploys and prints a table.
//
// Scale: `cdkx deploy` (the real binary, a subprocess) of N Cdkx::Core::Data resources in chains of depth
// 10, on the embedded SQLite state: wall time, peak RSS (wait4's ru_maxrss), bytes the process wrote
// (/proc/PID/io wchar, read while the exited child is still a zombie, so nothing is missed; that is all
// state writes, the event table going to /dev/null), and the state file's size.
//
// Latency: an in-process deploy of 1,000 resources in 100 chains of depth 10 against a fake provider
// answering every call after 20 ms, at concurrency 100, with the same SQLite state: wall time against the
// critical-path bound (depth × latency).
//
// With -diff, each scale deploy is followed by a no-op `cdkx diff --detailed-exitcode` of the same assembly
// and state (exit 0 wanted), timed the same way. Each run also prints its own figures to stderr.
//
// Usage: go run ./bench [-cdkx PATH] [-sizes 1000,10000] [-runs 3] [-diff]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

func main() {
	bin := flag.String("cdkx", "", "cdkx binary (default: build ./cmd/cdkx into a temporary directory)")
	sizes := flag.String("sizes", "1000,10000", "resource counts for the scale runs (empty: only the latency case)")
	runs := flag.Int("runs", 3, "runs per measurement; the table shows the median wall time")
	flag.BoolVar(&noOpDiff, "diff", false, "after each scale deploy, time a no-op `cdkx diff` of the same assembly and state")
	flag.Parse()
	if err := run(*bin, *sizes, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// noOpDiff is -diff: each scale deploy is followed by a no-op `cdkx diff`, timed like the deploy.
var noOpDiff bool

func run(bin, sizes string, runs int) error {
	tmp, err := os.MkdirTemp("", "cdkx-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if bin == "" {
		bin = filepath.Join(tmp, "cdkx")
		build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./cmd/cdkx")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build cdkx: %w", err)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resources\tchains×depth\twall (median)\tpeak RSS\tbytes written\tbytes/resource\tstate file\tno-op diff\tdiff RSS\t")
	for _, s := range strings.Split(sizes, ",") {
		if s == "" {
			continue // -sizes "": the latency case only
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n%10 != 0 {
			return fmt.Errorf("size %q: want a multiple of 10", s)
		}
		var walls, diffWalls []time.Duration
		var last, lastDiff scaleResult
		for i := range runs {
			dir := filepath.Join(tmp, fmt.Sprintf("scale-%d-%d", n, i))
			if err := writeAssembly(dir, n/10, 10); err != nil {
				return err
			}
			r, err := measureBinary(bin, dir, "deploy", "--concurrency", "10")
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "deploy %d run %d: %s, %s CPU, %.1f MB peak RSS\n", n, i+1, r.wall.Round(time.Millisecond), r.cpu.Round(10*time.Millisecond), float64(r.maxRSS)/1e6)
			walls = append(walls, r.wall)
			last = r
			if noOpDiff {
				d, err := measureBinary(bin, dir, "diff", "--detailed-exitcode")
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "no-op diff %d run %d: %s, %s CPU, %.1f MB peak RSS\n", n, i+1, d.wall.Round(time.Millisecond), d.cpu.Round(10*time.Millisecond), float64(d.maxRSS)/1e6)
				diffWalls = append(diffWalls, d.wall)
				lastDiff = d
			}
			_ = os.RemoveAll(dir)
		}
		diffWall, diffRSS := "-", "-"
		if noOpDiff {
			diffWall = median(diffWalls).Round(time.Millisecond).String()
			diffRSS = fmt.Sprintf("%.1f MB", float64(lastDiff.maxRSS)/1e6)
		}
		fmt.Fprintf(tw, "%d\t%d×10\t%s\t%.1f MB\t%.2f MB\t%d\t%.2f MB\t%s\t%s\t\n", n, n/10, median(walls).Round(time.Millisecond),
			float64(last.maxRSS)/1e6, float64(last.written)/1e6, last.written/int64(n), float64(last.stateSize)/1e6, diffWall, diffRSS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println()
	return latency(tmp, runs)
}

type scaleResult struct {
	wall      time.Duration
	cpu       time.Duration // user + system CPU time of the process
	maxRSS    int64         // bytes
	written   int64         // bytes written by the process (wchar)
	stateSize int64
}

// measureBinary runs `cdkx VERB --app cdkx.out --state .cdkx/state.db ARGS...` in dir and measures it; a
// diff must exit 0 (no changes, with --detailed-exitcode).
func measureBinary(bin, dir, verb string, args ...string) (scaleResult, error) {
	cmd := exec.CommandContext(context.Background(), bin, append([]string{verb, "--app", "cdkx.out", "--state", ".cdkx/state.db"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=true", "NO_COLOR=1")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return scaleResult{}, err
	}
	defer func() { _ = devnull.Close() }()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = devnull, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return scaleResult{}, err
	}
	// Wait for exit without reaping, so /proc/PID/io still holds the final counters.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		return scaleResult{}, fmt.Errorf("waitid: %w", err)
	}
	wall := time.Since(start)
	written, err := wchar(cmd.Process.Pid)
	if err != nil {
		return scaleResult{}, err
	}
	var ru syscall.Rusage
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, 0, &ru); err != nil {
		return scaleResult{}, fmt.Errorf("wait4: %w", err)
	}
	if ws.ExitStatus() != 0 {
		return scaleResult{}, fmt.Errorf("cdkx %s exited %d: %s", verb, ws.ExitStatus(), stderr.String())
	}
	size := int64(0)
	matches, _ := filepath.Glob(filepath.Join(dir, ".cdkx", "state.db*"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil {
			size += fi.Size()
		}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return scaleResult{wall: wall, cpu: cpu, maxRSS: ru.Maxrss * 1024, written: written, stateSize: size}, nil
}

func wchar(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("read io counters: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no wchar in /proc/%d/io", pid)
}

// writeAssembly writes a one-stack assembly of chains×depth Cdkx::Core::Data resources: in each chain,
// resource i reads the output of resource i-1 through a {ref, attr} token.
func writeAssembly(dir string, chains, depth int) error {
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	resources := map[string]any{}
	for c := range chains {
		for d := range depth {
			id := fmt.Sprintf("Chain%dNode%d%08X", c, d, c*depth+d)
			input := map[string]any{"chain": c, "depth": d, "payload": "value-" + id}
			if d > 0 {
				input["previous"] = map[string]any{"ref": fmt.Sprintf("Chain%dNode%d%08X", c, d-1, c*depth+d-1), "attr": "id"}
			}
			resources[id] = map[string]any{"type": "Cdkx::Core::Data", "provider": "cdkx",
				"properties": map[string]any{"input": input}, "metadata": map[string]any{"cdkx:path": fmt.Sprintf("Bench/Chain%d/Node%d", c, d)}}
		}
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{
		"Bench": map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": "Bench.json"}}}}
	if err := writeJSON(filepath.Join(out, "manifest.json"), manifest); err != nil {
		return err
	}
	return writeJSON(filepath.Join(out, "Bench.json"), map[string]any{"resources": resources})
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// latency deploys 100 chains of depth 10 against a 20 ms fake provider at concurrency 100.
func latency(tmp string, runs int) error {
	const chains, depth, lat, conc = 100, 10, 20 * time.Millisecond, 100
	bound := time.Duration(depth) * lat
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resources\tchains×depth\tlatency\tconcurrency\twall (median)\tcritical path\tratio\tmax in flight\t")
	var walls []time.Duration
	var maxInFlight int64
	for i := range runs {
		cloud := enginetest.NewCloud()
		cloud.Latency = lat
		wall, err := deployInProcess(filepath.Join(tmp, fmt.Sprintf("latency-%d", i)), cloud, chains, depth, conc)
		if err != nil {
			return err
		}
		walls = append(walls, wall)
		maxInFlight = max(maxInFlight, cloud.MaxInFlight())
	}
	for i, w := range walls {
		fmt.Fprintf(os.Stderr, "latency run %d: %s (%.3f×)\n", i+1, w.Round(time.Millisecond), float64(w)/float64(bound))
	}
	m := median(walls)
	fmt.Fprintf(tw, "%d\t%d×%d\t%s\t%d\t%s\t%s\t%.3f×\t%d\t\n", chains*depth, chains, depth, lat, conc,
		m.Round(time.Millisecond), bound, float64(m)/float64(bound), maxInFlight)
	return tw.Flush()
}

func deployInProcess(dir string, cloud *enginetest.Cloud, chains, depth, conc int) (time.Duration, error) {
	ctx := context.Background()
	st := &assembly.Stack{ID: "Latency", Outputs: map[string]*assembly.Output{}}
	for c := range chains {
		for d := range depth {
			props := resource.Properties{"key": fmt.Sprintf("c%d-d%d", c, d), "value": "v"}
			if d > 0 {
				props["value"] = map[string]any{"ref": fmt.Sprintf("C%03dD%02d", c, d-1), "attr": "id"}
			}
			id := fmt.Sprintf("C%03dD%02d", c, d)
			st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake",
				Properties: props, Path: "resources." + id})
		}
	}
	sort.Slice(st.Resources, func(i, j int) bool { return st.Resources[i].LogicalID < st.Resources[j].LogicalID })
	a := &assembly.Assembly{Stacks: []*assembly.Stack{st}}
	b, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = b.Close() }()
	reg := engine.NewRegistry(cloud)
	start := time.Now()
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"Latency"},
		State: map[string]*state.Stack{"Latency": state.NewStack("Latency")}, Schemas: reg.Schema})
	if ds.HasErrors() {
		return 0, ds.Err()
	}
	res, err := engine.Deploy(ctx, p, engine.Options{Backend: b, Providers: reg, Concurrency: conc})
	if err != nil {
		return 0, err
	}
	wall := time.Since(start)
	if err := res.Err(); err != nil {
		return 0, err
	}
	return wall, nil
}
