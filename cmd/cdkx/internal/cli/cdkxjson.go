package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// ConfigFile is the project's configuration file in the working directory.
const ConfigFile = "cdkx.json"

// ConfigWarnings returns one warning per key of the cdkx.json at path that cdkx does not know, at the top
// level and inside "approval", each with the nearest known key, e.g. `cdkx.json: unknown key
// "requireAproval"; did you mean "requireApproval"?`. A missing or malformed file has no warnings
// (LoadConfig reports a malformed one).
func ConfigWarnings(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil
	}
	known := jsonKeys(reflect.TypeFor[cdkxJSON]())
	known = append(known, "app") // the command that synthesizes the assembly: the TypeScript cdkx runs it
	warnings := unknownKeys(path, "", top, known)
	var approval map[string]json.RawMessage
	if raw, ok := top["approval"]; ok && json.Unmarshal(raw, &approval) == nil {
		f, _ := reflect.TypeFor[cdkxJSON]().FieldByName("Approval")
		warnings = append(warnings, unknownKeys(path, "approval.", approval, jsonKeys(f.Type))...)
	}
	return warnings
}

// PrintConfigWarnings prints ConfigWarnings of cdkx.json in the working directory on w, one
// "warning: …" line each.
func PrintConfigWarnings(w io.Writer) {
	for _, msg := range ConfigWarnings(ConfigFile) {
		fmt.Fprintln(w, "warning: "+msg)
	}
}

// unknownKeys returns the warnings for the keys of m not in known, sorted; prefix is the keys' JSON path.
func unknownKeys(path, prefix string, m map[string]json.RawMessage, known []string) []string {
	var out []string
	for k := range m {
		if slices.Contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("%s: unknown key %q", path, prefix+k)
		if near := diag.Nearest(k, known); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", prefix+near)
		} else {
			sorted := slices.Sorted(slices.Values(known))
			msg += fmt.Sprintf(" (cdkx reads %s); it is ignored", strings.Join(sorted, ", "))
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return out
}

// jsonKeys returns the JSON names of the fields of struct type t.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}
