package multipass

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeInstance is a Multipass instance (an Ubuntu VM on the developer's machine), launched with
// `multipass launch` and named by its name, which is also its physical ID.
//
// Properties, as the TypeScript cdkx's schema (packages/providers/multipass/multipass/schemas/v1/
// vm.schema.json, branch v0-legacy of cdk-x/cdkx), every one create-only:
//   - name (string, required): letters, digits and hyphens, starting with a letter and ending with a
//     letter or digit (utils::valid_hostname in canonical/multipass src/utils/utils.cpp);
//   - image (string): image alias, remote:alias or http(s)/file URL (`launch` positional argument);
//   - cpus (integer ≥ 1), memory and disk (sizes as Multipass reads them: bytes, or a number with K, M or
//     G, optionally followed by B or iB, e.g. "512M", "1.5G"; at least 128M and 512M);
//   - bridged (boolean): `--bridged`;
//   - timeout (integer seconds > 0): `--timeout`, and how long cdkx waits for the instance to run;
//   - networks (list of {name (required), mode: auto|manual, mac}): `--network name=…,mode=…,mac=…`;
//   - mounts (list of {source (required), target}): `--mount SOURCE[:TARGET]`;
//   - cloudInit (string): inline user data (it starts with "#" or holds a newline), sent on stdin with
//     `--cloud-init -`, or the path of a file (an asset's, as the engine resolves it), `--cloud-init PATH`.
//
// Outputs: name, ipAddress (the first IPv4 address, "" while it has none), sshUser ("ubuntu") and crn
// (crn:cdkx:multipass:compute:instance/<name>).
const TypeInstance = "Multipass::Compute::Instance"

// SSHUser is the user of Multipass's Ubuntu images, the sshUser output.
const SSHUser = "ubuntu"

// Minimum sizes of the daemon (min_memory_size and min_disk_size in include/multipass/constants.h).
const (
	minMemory = 128 << 20
	minDisk   = 512 << 20
)

var instanceSchema = resource.Schema{
	Type:        TypeInstance,
	Description: "A Multipass instance: an Ubuntu VM on this machine (multipass launch / info / delete --purge).",
	Properties: map[string]resource.PropertySchema{
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Instance name: letters, digits and hyphens, starting with a letter, e.g. dev-vm"},
		"image": {Kind: resource.KindString, CreateOnly: true,
			Description: "Image alias or remote path, e.g. jammy, 22.04, docker; Multipass's default LTS when absent"},
		"cpus": {Kind: resource.KindInteger, CreateOnly: true, Description: "Virtual CPUs, at least 1"},
		"memory": {Kind: resource.KindString, CreateOnly: true,
			Description: "Memory, e.g. 2G or 512M (bytes, or K, M, G), at least 128M"},
		"disk": {Kind: resource.KindString, CreateOnly: true,
			Description: "Disk size, e.g. 20G (bytes, or K, M, G), at least 512M"},
		"bridged": {Kind: resource.KindBool, CreateOnly: true,
			Description: "Add an interface bridged to the host's local.bridged-network"},
		"timeout": {Kind: resource.KindInteger, CreateOnly: true,
			Description: "Seconds the launch may take, until the instance runs with an IPv4 address (default 300)"},
		"networks": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindObject},
			Description: "Extra interfaces: [{name (a host network, see multipass networks), mode: auto|manual, mac}]"},
		"mounts": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindObject},
			Description: "Host folders mounted in the instance: [{source (a folder on this machine), target (absolute path in the instance)}]"},
		"cloudInit": {Kind: resource.KindString, CreateOnly: true,
			Description: "cloud-init user data: inline (#cloud-config…) or the path of a file"},
	},
	Outputs:             []string{"name", "ipAddress", "sshUser"},
	StableOutputs:       []string{"name", "sshUser"},
	ReplaceNote:         "the VM and everything on its disk are lost",
	DeleteBeforeReplace: true,
	Identity:            []string{"name"},
	Check:               checkInstance,
}

// nameRE is utils::valid_hostname of canonical/multipass (src/utils/utils.cpp).
var nameRE = regexp.MustCompile(`^([a-zA-Z]|[a-zA-Z][a-zA-Z0-9-]*[a-zA-Z0-9])$`)

// sizeRE is the pattern of mp::in_bytes (src/utils/memory_size.cpp), case-insensitive: a whole number,
// a decimal fraction only before a unit, a unit K, M or G optionally followed by B or iB, or B alone,
// with blanks around.
var sizeRE = regexp.MustCompile(`(?i)^\s*(\d+)(?:\.(\d+))?(?:([KMG])(?:i?B)?|B)?\s*$`)

// macRE is utils::valid_mac_address of canonical/multipass.
var macRE = regexp.MustCompile(`^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$`)

// ParseSize returns the bytes of a memory or disk size as Multipass reads it (mp::in_bytes): "1024",
// "1024B", "512K", "512M", "2G", "2GB", "2GiB", "1.5G" (a fraction needs a unit; units are powers of
// 1024, any case). ok is false for anything else, or a size beyond an int64.
func ParseSize(s string) (bytes int64, ok bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil || (m[2] != "" && m[3] == "") {
		return 0, false
	}
	whole, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := int64(1)
	switch strings.ToUpper(m[3]) {
	case "K":
		unit = 1 << 10
	case "M":
		unit = 1 << 20
	case "G":
		unit = 1 << 30
	}
	if whole > math.MaxInt64/unit {
		return 0, false
	}
	n := whole * unit
	if m[2] != "" {
		frac, err := strconv.ParseFloat("0."+m[2], 64)
		if err != nil {
			return 0, false
		}
		n += int64(frac * float64(unit))
	}
	return n, true
}

func checkInstance(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	add := func(path, format string, args ...any) {
		errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if name, ok := kit.Known(props["name"], unknown).(string); ok && !nameRE.MatchString(name) {
		add("name", "%q is not a name Multipass accepts: use letters, digits and hyphens, starting with a letter and ending with a letter or digit%s",
			name, suggestName(name))
	}
	if image, ok := kit.Known(props["image"], unknown).(string); ok {
		switch {
		case image == "":
			add("image", `must not be empty: leave image out for Multipass's default, or write an alias such as "jammy"`)
		case strings.HasPrefix(image, "-"):
			add("image", "%q starts with '-', which multipass launch would read as an option: write an image alias such as \"jammy\"", image)
		case !isImageURL(image) && strings.Count(image, ":") > 1:
			add("image", "%q has more than one ':': write an alias (\"jammy\"), remote:alias (\"daily:noble\") or an http(s):// or file:// URL", image)
		}
	}
	if n, ok := kit.Known(props["cpus"], unknown).(json.Number); ok {
		if v, err := n.Int64(); err == nil && v < 1 {
			add("cpus", "must be at least 1, got %d", v)
		}
	}
	if n, ok := kit.Known(props["timeout"], unknown).(json.Number); ok {
		if v, err := n.Int64(); err == nil && v <= 0 {
			add("timeout", "must be a positive number of seconds (e.g. 600), got %d; leave it out for the default of 300", v)
		}
	}
	for _, sz := range []struct {
		key  string
		min  int64
		show string
	}{{"memory", minMemory, "128M"}, {"disk", minDisk, "512M"}} {
		s, ok := kit.Known(props[sz.key], unknown).(string)
		if !ok {
			continue
		}
		n, ok := ParseSize(s)
		switch {
		case !ok:
			add(sz.key, "%q is not a size Multipass reads: write bytes, or a number with K, M or G, e.g. \"512M\", \"2G\" or \"1.5G\"", s)
		case n < sz.min:
			add(sz.key, "%q is below Multipass's minimum %s of %s", s, sz.key, sz.show)
		}
	}
	if list, ok := kit.Known(props["networks"], unknown).([]any); ok {
		for i, e := range list {
			errs = append(errs, checkNetwork(fmt.Sprintf("networks[%d]", i), kit.Known(e, unknown), unknown)...)
		}
	}
	if list, ok := kit.Known(props["mounts"], unknown).([]any); ok {
		for i, e := range list {
			errs = append(errs, checkMount(fmt.Sprintf("mounts[%d]", i), kit.Known(e, unknown), unknown)...)
		}
	}
	if s, ok := kit.Known(props["cloudInit"], unknown).(string); ok && strings.TrimSpace(s) == "" {
		add("cloudInit", "must not be empty: write cloud-init user data (#cloud-config…) or the path of a file, or leave cloudInit out")
	}
	return errs
}

func isImageURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "file://")
}

// suggestName returns `, e.g. "fixed"` for a name that can be fixed by replacing what Multipass refuses
// with hyphens, or "".
func suggestName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-0123456789")
	if s == "" || !nameRE.MatchString(s) {
		return ""
	}
	return fmt.Sprintf(`, e.g. %q`, s)
}

// checkObject checks that the keys of the object v are among allowed and its values strings; it reports
// each problem at path.key. A v that is not an object is left to the generic check of the list's items.
func checkObject(path string, v any, unknown resource.IsUnknownFunc, allowed ...string) (map[string]any, []resource.FieldError) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	var errs []resource.FieldError
	for k, e := range obj {
		if !slices.Contains(allowed, k) {
			errs = append(errs, resource.FieldError{Path: path + "." + k, Message: fmt.Sprintf("unknown key %q; write %s", k, strings.Join(allowed, ", "))})
			continue
		}
		if e = kit.Known(e, unknown); e != nil {
			if _, ok := e.(string); !ok {
				errs = append(errs, resource.FieldError{Path: path + "." + k, Message: "must be a string"})
			}
		}
	}
	return obj, errs
}

// checkNetwork checks one {name, mode, mac} as launch's net_digest reads it (src/client/cli/cmd/launch.cpp):
// the spec is split at commas and equals signs, so the name can hold neither.
func checkNetwork(path string, v any, unknown resource.IsUnknownFunc) []resource.FieldError {
	obj, errs := checkObject(path, v, unknown, "name", "mode", "mac")
	if obj == nil {
		return errs
	}
	if _, ok := obj["name"]; !ok {
		errs = append(errs, resource.FieldError{Path: path + ".name", Message: `required: the host network to connect to (see multipass networks), e.g. "en0"`})
	}
	if name, ok := kit.Known(obj["name"], unknown).(string); ok {
		switch {
		case name == "":
			errs = append(errs, resource.FieldError{Path: path + ".name", Message: `must not be empty: name a host network (see multipass networks), e.g. "en0"`})
		case strings.ContainsAny(name, ",="):
			errs = append(errs, resource.FieldError{Path: path + ".name", Message: fmt.Sprintf("%q holds ',' or '=', which --network reads as separators: name a host network as multipass networks lists it", name)})
		}
	}
	if mode, ok := kit.Known(obj["mode"], unknown).(string); ok && mode != "auto" && mode != "manual" {
		errs = append(errs, resource.FieldError{Path: path + ".mode", Message: fmt.Sprintf(`must be "auto" or "manual", got %q`, mode)})
	}
	if mac, ok := kit.Known(obj["mac"], unknown).(string); ok && !macRE.MatchString(mac) {
		errs = append(errs, resource.FieldError{Path: path + ".mac", Message: fmt.Sprintf(`%q is not a MAC address: write six pairs of hex digits separated by colons, e.g. "52:54:00:12:34:56"`, mac)})
	}
	return errs
}

// checkMount checks one {source, target} as launch's --mount reads it: SOURCE:TARGET split at the first
// colon (after a Windows drive letter), a target Multipass does not refuse (utils::invalid_target_path:
// "/", /dev, /proc, /sys, /home and /home/ubuntu themselves).
func checkMount(path string, v any, unknown resource.IsUnknownFunc) []resource.FieldError {
	obj, errs := checkObject(path, v, unknown, "source", "target")
	if obj == nil {
		return errs
	}
	if _, ok := obj["source"]; !ok {
		errs = append(errs, resource.FieldError{Path: path + ".source", Message: `required: the folder on this machine to mount, e.g. "/home/me/code"`})
	}
	if src, ok := kit.Known(obj["source"], unknown).(string); ok {
		switch {
		case src == "":
			errs = append(errs, resource.FieldError{Path: path + ".source", Message: `must not be empty: write the folder on this machine to mount, e.g. "/home/me/code"`})
		case strings.Contains(stripDrive(src), ":"):
			errs = append(errs, resource.FieldError{Path: path + ".source", Message: fmt.Sprintf("%q holds ':', where --mount SOURCE:TARGET splits: mount a folder whose path has no colon", src)})
		}
	}
	if tgt, ok := kit.Known(obj["target"], unknown).(string); ok {
		switch {
		case !strings.HasPrefix(tgt, "/"):
			errs = append(errs, resource.FieldError{Path: path + ".target", Message: fmt.Sprintf(`%q is not an absolute path in the instance: write e.g. "/home/ubuntu/code", or leave target out for /home/ubuntu/<folder name>`, tgt)})
		case reservedTarget(tgt):
			errs = append(errs, resource.FieldError{Path: path + ".target", Message: fmt.Sprintf(`Multipass refuses to mount on %q: choose a folder below it, e.g. "/home/ubuntu/code"`, tgt)})
		}
	}
	return errs
}

// stripDrive drops a Windows drive prefix ("C:\" or "C:/"), whose colon --mount does not split at.
func stripDrive(p string) string {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')) {
		return p[3:]
	}
	return p
}

// reservedTargetRE is utils::invalid_target_path of canonical/multipass, applied to the cleaned path.
var reservedTargetRE = regexp.MustCompile(`^(/+|/+(dev|proc|sys)(/.*)*|/+home(/*)(/ubuntu/*)*)$`)

func reservedTarget(p string) bool {
	return reservedTargetRE.MatchString(cleanSlash(p))
}

// cleanSlash is QDir::cleanPath for a unix path: no "." or "..", no trailing slash.
func cleanSlash(p string) string {
	var parts []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, s)
		}
	}
	return "/" + strings.Join(parts, "/")
}
