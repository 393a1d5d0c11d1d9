package fakemp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// format returns the --format value after checking it as handle_format_option does
// (src/client/cli/cmd/common_cli.cpp): "table" (the default) and "json" are answered; "csv" and "yaml",
// which the real CLI also knows, are refused by the fake; anything else is the real "Invalid format type
// given." (exit 1).
func (inv *invocation) format(p parsedArgs) (string, bool) {
	f := "table"
	if p.isSet("format") {
		f = p.value("format")
	}
	switch f {
	case "table", "json":
		return f, true
	case "csv", "yaml":
		fmt.Fprintf(inv.stderr, "%s: --format %s is not implemented by the fake (table, json)\n", fakeErrorCommand, f)
		return "", false
	default:
		fmt.Fprint(inv.stderr, "Invalid format type given.\n")
		return "", false
	}
}

// noArguments refuses positional arguments as version, list, networks and purge do.
func (inv *invocation) noArguments(p parsedArgs) bool {
	if len(p.positional) > 0 {
		fmt.Fprint(inv.stderr, "This command takes no arguments\n")
		return false
	}
	return true
}

// writeJSON prints v as QJsonDocument::toJson does (src/utils/json_utils.cpp, Qt's qjsonwriter.cpp):
// indented by four spaces, "key": value, keys in lexical order (QJsonObject sorts them), empty arrays
// and objects opened and closed on two lines, a final newline.
func (inv *invocation) writeJSON(v any) {
	b, err := qtJSON(v)
	if err != nil {
		fmt.Fprintf(inv.stderr, "%s: %v\n", fakeErrorCommand, err)
		return
	}
	_, _ = inv.stdout.Write(b)
}

func qtJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeQtValue(&buf, tree, 0); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

func writeQtValue(buf *bytes.Buffer, v any, indent int) error {
	pad := func(n int) { buf.WriteString(strings.Repeat("    ", n)) }
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteString("{\n")
		for i, k := range keys {
			pad(indent + 1)
			if err := writeQtString(buf, k); err != nil {
				return err
			}
			buf.WriteString(": ")
			if err := writeQtValue(buf, t[k], indent+1); err != nil {
				return err
			}
			if i < len(keys)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		pad(indent)
		buf.WriteByte('}')
	case []any:
		buf.WriteString("[\n")
		for i, e := range t {
			pad(indent + 1)
			if err := writeQtValue(buf, e, indent+1); err != nil {
				return err
			}
			if i < len(t)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		pad(indent)
		buf.WriteByte(']')
	case string:
		return writeQtString(buf, t)
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeQtString(buf *bytes.Buffer, s string) error {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
	return nil
}

// readOnly reads the state under its lock.
func (inv *invocation) readOnly(cmd string, fn func(s *store) error) (int, bool) {
	return inv.update(cmd, func(s *store) (bool, error) { return false, fn(s) })
}

// runVersion answers `version [--format json|table]` (src/client/cli/cmd/version.cpp; the shapes in
// json_formatter.cpp and table_formatter.cpp): {"multipass": V, "multipassd": V}. When the daemon does
// not answer it prints only the client's version and still exits 0, as the real one does.
func runVersion(inv *invocation, p parsedArgs) int {
	if !inv.noArguments(p) {
		return ExitCommandLine
	}
	f, ok := inv.format(p)
	if !ok {
		return ExitCommandLine
	}
	daemon := Version
	if inv.env.DaemonDown {
		daemon = ""
	}
	if f == "json" {
		v := map[string]string{"multipass": Version}
		if daemon != "" {
			v["multipassd"] = daemon
		}
		inv.writeJSON(v)
		return ExitOK
	}
	fmt.Fprintf(inv.stdout, "%-12s%s\n", "multipass", Version)
	if daemon != "" {
		fmt.Fprintf(inv.stdout, "%-12s%s\n", "multipassd", daemon)
	}
	return ExitOK
}

// runList answers `list [--format json] [--no-ipv4] [--snapshots]` (src/client/cli/cmd/list.cpp,
// Daemon::list): {"list": [{"ipv4": [...], "name", "release": "Ubuntu 24.04 LTS", "state"}]}, live
// instances by name then deleted ones; ipv4 is empty unless Running. The fake has no snapshots, so
// --snapshots lists none.
func runList(inv *invocation, p parsedArgs) int {
	if !inv.noArguments(p) {
		return ExitCommandLine
	}
	if p.isSet("snapshots") && p.isSet("no-ipv4") {
		fmt.Fprint(inv.stderr, "IP addresses are not applicable in conjunction with listing snapshots\n")
		return ExitCommandLine
	}
	f, ok := inv.format(p)
	if !ok {
		return ExitCommandLine
	}
	if code, down := inv.daemonDown("list"); down {
		return code
	}
	type row struct{ name, state, ipv4, release string }
	var rows []row
	var list []map[string]any
	now := inv.env.now()
	code, ok := inv.readOnly("list", func(s *store) error {
		for _, deleted := range []bool{false, true} {
			for _, n := range s.sortedNames() {
				in := s.Instances[n]
				if in.Deleted != deleted {
					continue
				}
				st := in.State(now)
				ips := []string{}
				if st == StateRunning && !p.isSet("no-ipv4") {
					ips = append(ips, in.IPv4)
				}
				release := "Not Available"
				if in.ImageRelease != "" {
					release = "Ubuntu " + in.ImageRelease
				}
				list = append(list, map[string]any{"name": n, "state": st, "ipv4": ips, "release": release})
				ip := "--"
				if len(ips) > 0 {
					ip = ips[0]
				}
				rows = append(rows, row{n, st, ip, release})
			}
		}
		return nil
	})
	if !ok {
		return code
	}
	if p.isSet("snapshots") {
		if f == "json" {
			inv.writeJSON(map[string]any{"errors": []any{}, "info": map[string]any{}})
		} else {
			fmt.Fprint(inv.stdout, "No snapshots found.\n")
		}
		return ExitOK
	}
	if f == "json" {
		if list == nil {
			list = []map[string]any{}
		}
		inv.writeJSON(map[string]any{"list": list})
		return ExitOK
	}
	// table_formatter.cpp, generate_instances_list.
	if len(rows) == 0 {
		fmt.Fprint(inv.stdout, "No instances found.\n")
		return ExitOK
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	// format::column_width (include/multipass/cli/format_utils.h): the widest name or header plus 3, at
	// least 24.
	w := len("Name")
	for _, r := range rows {
		w = max(w, len(r.name))
	}
	w = max(w+3, 24)
	fmt.Fprintf(inv.stdout, "%-*s%-18s%-17s%s\n", w, "Name", "State", "IPv4", "Image")
	for _, r := range rows {
		fmt.Fprintf(inv.stdout, "%-*s%-18s%-17s%s\n", w, r.name, r.state, r.ipv4, r.release)
	}
	return ExitOK
}

// runInfo answers `info [NAME…] [--format json]` (src/client/cli/cmd/info.cpp, Daemon::info,
// populate_instance_info; the shape in json_formatter.cpp, generate_instance_details): {"errors": [],
// "info": {NAME: {...}}}, every instance when no name is given. cpu_count and snapshot_count are strings,
// disk used/total strings of bytes, memory used/total integers of bytes; the runtime fields (cpu_count,
// load, disks, memory, ipv4, release) are empty unless the instance is Running, as the daemon only asks a
// running instance for them. Names that are not instances fail with exit 2 and nothing on stdout.
func runInfo(inv *invocation, p parsedArgs) int {
	f, ok := inv.format(p)
	if !ok {
		return ExitCommandLine
	}
	if len(p.positional) > 0 && p.isSet("all") {
		fmt.Fprintf(inv.stderr, "Cannot specify name%s when --all option set\n", plural(len(p.positional)))
		return ExitCommandLine
	}
	if p.isSet("all") {
		fmt.Fprint(inv.stderr, "Warning: the `--all` flag for the `info` command is deprecated. Please use `info` with no positional arguments for the same effect.\n")
	}
	if code, down := inv.daemonDown("info"); down {
		return code
	}
	now := inv.env.now()
	var picked []*Instance
	code, ok := inv.readOnly("info", func(s *store) error {
		names, err := selectInstances(s, p.positional)
		if err != nil {
			return err
		}
		for _, n := range names {
			picked = append(picked, s.Instances[n])
		}
		return nil
	})
	if !ok {
		return code
	}
	noRuntime := p.isSet("no-runtime-information")
	if f == "json" {
		info := map[string]any{}
		for _, in := range picked {
			info[in.Name] = instanceDetails(in, now, noRuntime)
		}
		inv.writeJSON(map[string]any{"errors": []any{}, "info": info})
		return ExitOK
	}
	for i, in := range picked {
		if i > 0 {
			fmt.Fprintln(inv.stdout)
		}
		writeInfoTable(inv, in, now, noRuntime)
	}
	return ExitOK
}

func plural(n int) string {
	if n > 1 {
		return "s"
	}
	return ""
}

// selectInstances returns the instances named (each once, live ones first, then deleted ones, as the
// daemon walks them), or every instance when names is empty. Names that are not instances make a
// missingInstances error; "NAME.SNAPSHOT" of an instance is the daemon's "No such snapshot" (the fake has
// none).
func selectInstances(s *store, names []string) ([]string, error) {
	if len(names) == 0 {
		names = s.sortedNames()
	}
	seen := map[string]bool{}
	var missing, live, deleted, snaps []string
	for _, arg := range names {
		n, snap, isSnap := strings.Cut(arg, ".")
		if isSnap {
			if _, ok := s.Instances[n]; ok {
				snaps = append(snaps, fmt.Sprintf("No such snapshot: %s.%s", n, snap))
				continue
			}
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		in, ok := s.Instances[n]
		switch {
		case !ok:
			missing = append(missing, n)
		case in.Deleted:
			deleted = append(deleted, n)
		default:
			live = append(live, n)
		}
	}
	if len(missing) > 0 {
		return nil, missingInstances(missing)
	}
	if len(snaps) > 0 {
		return nil, daemonError{message: "The following errors occurred:\n" + strings.Join(snaps, "\n")}
	}
	return append(live, deleted...), nil
}

// Runtime figures the fake reports for a Running instance. The real daemon reads them in the guest
// (src/daemon/runtime_instance_info_helper.cpp: `free -b`, `df -B1`, /proc/loadavg), where the kernel
// and the file system keep part of what was allocated; the fake reports fixed shares of the allocation.
func memoryTotal(in *Instance) int64 { return in.MemoryBytes - in.MemoryBytes/16 }
func memoryUsed(in *Instance) int64  { return memoryTotal(in) / 5 }
func diskTotal(in *Instance) int64   { return in.DiskBytes - in.DiskBytes/32 }
func diskUsed(in *Instance) int64    { return min(diskTotal(in)/2, 1932735283) }

var runtimeLoad = []float64{0.08, 0.03, 0.01}

func instanceDetails(in *Instance, now time.Time, noRuntime bool) map[string]any {
	st := in.State(now)
	d := map[string]any{
		"state":          st,
		"image_hash":     in.ImageHash,
		"image_release":  in.ImageRelease,
		"release":        "",
		"cpu_count":      "",
		"snapshot_count": "0",
		"load":           []float64{},
		"disks":          map[string]any{"sda1": map[string]string{}},
		"memory":         map[string]int64{},
		"ipv4":           []string{},
		"mounts":         mountsJSON(in),
	}
	if st == StateRunning && !noRuntime {
		d["release"] = in.Release
		d["cpu_count"] = strconv.Itoa(in.CPUs)
		d["load"] = runtimeLoad
		d["disks"] = map[string]any{"sda1": map[string]string{
			"used":  strconv.FormatInt(diskUsed(in), 10),
			"total": strconv.FormatInt(diskTotal(in), 10),
		}}
		d["memory"] = map[string]int64{"used": memoryUsed(in), "total": memoryTotal(in)}
		d["ipv4"] = []string{in.IPv4}
	}
	return d
}

// mountsJSON is info's "mounts": target → source_path and the id mappings, "HOSTID:default" for the
// user running the fake (the mappings `multipass mount` makes without -u/-g).
func mountsJSON(in *Instance) map[string]any {
	m := map[string]any{}
	for _, mt := range in.Mounts {
		m[mt.Target] = map[string]any{
			"source_path":  mt.Source,
			"uid_mappings": []string{fmt.Sprintf("%d:default", os.Getuid())},
			"gid_mappings": []string{fmt.Sprintf("%d:default", os.Getgid())},
		}
	}
	return m
}

// writeInfoTable prints an instance as `info` does without --format (table_formatter.cpp, abridged).
func writeInfoTable(inv *invocation, in *Instance, now time.Time, noRuntime bool) {
	d := instanceDetails(in, now, noRuntime)
	row := func(k, v string) { fmt.Fprintf(inv.stdout, "%-16s%s\n", k+":", v) }
	orDash := func(s string) string {
		if s == "" {
			return "--"
		}
		return s
	}
	row("Name", in.Name)
	row("State", d["state"].(string))
	row("Snapshots", "0")
	ips := d["ipv4"].([]string)
	row("IPv4", orDash(strings.Join(ips, ", ")))
	row("Release", orDash(d["release"].(string)))
	row("Image hash", orDash(shortHash(in.ImageHash)+" (Ubuntu "+in.ImageRelease+")"))
	row("CPU(s)", orDash(d["cpu_count"].(string)))
	if d["state"] == StateRunning && !noRuntime {
		row("Load", "0.08 0.03 0.01")
		row("Disk usage", fmt.Sprintf("%s out of %s", humanBytes(diskUsed(in)), humanBytes(diskTotal(in))))
		row("Memory usage", fmt.Sprintf("%s out of %s", humanBytes(memoryUsed(in)), humanBytes(memoryTotal(in))))
	} else {
		row("Load", "--")
		row("Disk usage", "--")
		row("Memory usage", "--")
	}
	if len(in.Mounts) == 0 {
		row("Mounts", "--")
	}
	for i, mt := range in.Mounts {
		k := ""
		if i == 0 {
			k = "Mounts:"
		}
		fmt.Fprintf(inv.stdout, "%-16s%s => %s\n", k, mt.Source, mt.Target)
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// humanBytes is MemorySize::human_readable (src/utils/memory_size.cpp) with one decimal.
func humanBytes(n int64) string {
	for _, u := range []struct {
		size   float64
		suffix string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if q := float64(n) / u.size; q >= 1 {
			return fmt.Sprintf("%.1f%s", q, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// hostNetwork is one entry of `networks`: the interface, its type and description as the Linux backend
// describes them (a bridge or an ethernet device).
func hostNetwork(name string) map[string]string {
	if strings.Contains(name, "br") {
		return map[string]string{"name": name, "type": "bridge", "description": "Network bridge"}
	}
	return map[string]string{"name": name, "type": "ethernet", "description": "Ethernet device"}
}

// runNetworks answers `networks [--format json]` (src/client/cli/cmd/networks.cpp, Daemon::networks;
// json_formatter.cpp): {"list": [{"description", "name", "type"}]} sorted by name, the interfaces of
// MULTIPASS_FAKE_NETWORKS.
func runNetworks(inv *invocation, p parsedArgs) int {
	if !inv.noArguments(p) {
		return ExitCommandLine
	}
	f, ok := inv.format(p)
	if !ok {
		return ExitCommandLine
	}
	if code, down := inv.daemonDown("networks"); down {
		return code
	}
	names := append([]string(nil), inv.env.Networks...)
	sort.Strings(names)
	list := []map[string]string{}
	for _, n := range names {
		list = append(list, hostNetwork(n))
	}
	if f == "json" {
		inv.writeJSON(map[string]any{"list": list})
		return ExitOK
	}
	if len(list) == 0 {
		fmt.Fprint(inv.stdout, "No network interfaces found.\n")
		return ExitOK
	}
	nw, tw := len("Name"), len("Type")
	for _, n := range list {
		nw, tw = max(nw, len(n["name"])), max(tw, len(n["type"]))
	}
	fmt.Fprintf(inv.stdout, "%-*s%-*s%s\n", nw+3, "Name", tw+3, "Type", "Description")
	for _, n := range list {
		fmt.Fprintf(inv.stdout, "%-*s%-*s%s\n", nw+3, n["name"], tw+3, n["type"], n["description"])
	}
	return ExitOK
}

// runDelete answers `delete [--purge] [--all] NAME…` (src/client/cli/cmd/delete.cpp, Daemon::delet):
// without --purge the instances become Deleted (listed, their names and addresses still taken) until
// `purge`; with it they are gone. If any name is not an instance nothing is deleted and it fails with exit
// 2. It prints nothing on success.
func runDelete(inv *invocation, p parsedArgs) int {
	if len(p.positional) == 0 && !p.isSet("all") {
		fmt.Fprint(inv.stderr, "Name argument or --all is required\n")
		return ExitCommandLine
	}
	if len(p.positional) > 0 && p.isSet("all") {
		fmt.Fprintf(inv.stderr, "Cannot specify name%s when --all option set\n", plural(len(p.positional)))
		return ExitCommandLine
	}
	if code, down := inv.daemonDown("delete"); down {
		return code
	}
	purge := p.isSet("purge")
	code, ok := inv.update("delete", func(s *store) (bool, error) {
		names, err := selectInstances(s, p.positional)
		if err != nil {
			if de, ok := err.(daemonError); ok && strings.Contains(de.message, "No such snapshot") {
				// Daemon::delet reports a missing snapshot as its bare exception text.
				de.message = strings.TrimPrefix(de.message, "The following errors occurred:\n")
				return false, de
			}
			return false, err
		}
		for _, n := range names {
			if purge {
				delete(s.Instances, n)
			} else {
				s.Instances[n].Deleted = true
			}
		}
		return len(names) > 0, nil
	})
	if !ok {
		return code
	}
	return ExitOK
}

// runPurge answers `purge` (src/client/cli/cmd/purge.cpp, Daemon::purge): every Deleted instance is
// gone. It prints nothing.
func runPurge(inv *invocation, p parsedArgs) int {
	if !inv.noArguments(p) {
		return ExitCommandLine
	}
	if code, down := inv.daemonDown("purge"); down {
		return code
	}
	code, ok := inv.update("purge", func(s *store) (bool, error) {
		changed := false
		for n, in := range s.Instances {
			if in.Deleted {
				delete(s.Instances, n)
				changed = true
			}
		}
		return changed, nil
	})
	if !ok {
		return code
	}
	return ExitOK
}

// runHelp answers `help [COMMAND]` with the fake's usage or a command's help.
func runHelp(inv *invocation, p parsedArgs) int {
	if len(p.positional) == 0 {
		fmt.Fprint(inv.stdout, Usage())
		return ExitOK
	}
	c := findCommand(p.positional[0])
	if c == nil {
		fmt.Fprintf(inv.stderr, "Error: Unknown command: '%s'\n", p.positional[0])
		return ExitCommandLine
	}
	fmt.Fprint(inv.stdout, commandHelp(c))
	return ExitOK
}
