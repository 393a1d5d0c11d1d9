package powerdns

import (
	"fmt"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// checkCanonical requires a canonical DNS name: with a trailing dot, no empty label, no blanks.
func checkCanonical(path, name string) []resource.FieldError {
	bad := func(why string) []resource.FieldError {
		return []resource.FieldError{{Path: path, Message: fmt.Sprintf("%q is not a canonical DNS name: %s", name, why)}}
	}
	switch {
	case !strings.HasSuffix(name, "."):
		return bad(fmt.Sprintf("it must end with a dot, e.g. %q", name+"."))
	case name == ".":
		return nil
	case strings.HasPrefix(name, ".") || strings.Contains(name, ".."):
		return bad("it has an empty label")
	case strings.ContainsAny(name, " \t\r\n"):
		return bad("it contains a blank")
	}
	return nil
}

// inZone reports whether name is zone or below it, ignoring case. Both are canonical.
func inZone(name, zone string) bool {
	name, zone = strings.ToLower(name), strings.ToLower(zone)
	return zone == "." || name == zone || strings.HasSuffix(name, "."+zone)
}
