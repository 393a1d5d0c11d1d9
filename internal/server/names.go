package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Names follow the Pulumi Service's rules (github.com/pulumi/pulumi: sdk go/common/tokens ParseStackName
// and ValidateProjectName; pkg backend/httpstate validateOwnerName), so that a stack the Pulumi CLI can
// name is a stack the server accepts, and the other way round. On top of them, "." and ".." are never
// names: a client cleaning the URL path (as Go's ServeMux and most HTTP libraries do) would send a
// request about stack ".." somewhere else.

var (
	// orgName is Pulumi's stack owner rule: 3 to 40 characters, letters, digits, '-' and '_', beginning
	// and ending with a letter or digit.
	orgName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{1,38}[a-zA-Z0-9]$`)
	// nameChars is Pulumi's rule for project and stack names: 1 to 100 ASCII letters, digits, '-', '_'
	// and '.'.
	nameChars = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

// The rules, as the 400 answers state them.
const (
	orgRule     = "an organization name is 3 to 40 ASCII letters, digits, '-' or '_', beginning and ending with a letter or digit"
	projectRule = `a project name is 1 to 100 ASCII letters, digits, '-', '_' or '.', and not "." or ".."`
	stackRule   = `a stack name is 1 to 100 ASCII letters, digits, '-', '_' or '.', and not "." or ".."`
	tokenRule   = `a token name is 1 to 100 ASCII letters, digits, '-', '_' or '.', and not "." or ".."`
)

// dotted reports whether s is "." or "..".
func dotted(s string) bool { return s == "." || s == ".." }

// validOrgName reports whether s is a valid organization name (orgRule).
func validOrgName(s string) bool { return orgName.MatchString(s) }

// validProjectName reports whether s is a valid project name (projectRule).
func validProjectName(s string) bool { return nameChars.MatchString(s) && !dotted(s) }

// validStackName reports whether s is a valid stack name (stackRule).
func validStackName(s string) bool { return nameChars.MatchString(s) && !dotted(s) }

// nameRule matches token names (tokenRule); its MatchString is what the handlers that name things in
// bodies call until they call validStackName.
type nameRule struct{}

// MatchString reports whether s is 1 to 100 letters, digits, '-', '_' or '.', and not "." or "..".
func (nameRule) MatchString(s string) bool { return nameChars.MatchString(s) && !dotted(s) }

// validName matches token names, and (createStack) stack names sent in bodies.
var validName nameRule

// nameKinds are the names a request may carry, in the order they are checked: the path wildcards and
// the query parameters of the same meaning ({org} and ?organization=, {project} and ?project=, {stack}
// and ?stack=).
var nameKinds = []struct {
	wildcard, query, what, rule string
	valid                       func(string) bool
}{
	{"org", "organization", "organization", orgRule, validOrgName},
	{"project", "project", "project", projectRule, validProjectName},
	{"stack", "stack", "stack", stackRule, validStackName},
}

// checkNames checks every organization, project and stack name of the request: its path wildcards
// ({org}, {project}, {stack}, as the router decoded them: %2E%2E is ".." here) and its query parameters
// organization, project and stack (when not empty: an empty one filters nothing). It returns a 400 that
// names the bad value and the rule.
func checkNames(r *http.Request) error {
	q := r.URL.Query()
	for _, k := range nameKinds {
		if strings.Contains(r.Pattern, "{"+k.wildcard+"}") {
			if v := r.PathValue(k.wildcard); !k.valid(v) {
				return badName(k.what, v, k.rule, "in the path")
			}
		}
		for _, v := range q[k.query] {
			if v != "" && !k.valid(v) {
				return badName(k.what, v, k.rule, "in the query parameter "+k.query)
			}
		}
	}
	return nil
}

// badName is the 400 for an invalid name.
func badName(what, value, rule, where string) error {
	return errorf(http.StatusBadRequest, "Bad Request: invalid %s name %s %s: %s", what, quoteName(value), where, rule)
}

// quoteName quotes a name for a message, bounded so that an attacker's megabyte name is not echoed.
func quoteName(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%q… (%d bytes)", s[:120], len(s))
	}
	return fmt.Sprintf("%q", s)
}
