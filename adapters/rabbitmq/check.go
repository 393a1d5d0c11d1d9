package rabbitmq

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// maxShortString is the longest exchange name, queue name or routing key AMQP 0-9-1 carries, in bytes.
const maxShortString = 255

// checkName requires a known string property to be a non-empty name; short limits it to
// maxShortString bytes (AMQP names); reserved rejects names starting with "amq." (RabbitMQ refuses to
// declare them with 401 "Access refused.").
func checkName(props resource.Properties, unknown resource.IsUnknownFunc, key, what string, short, reserved bool) []resource.FieldError {
	s, ok := kit.KnownString(props[key], unknown)
	if !ok {
		return nil
	}
	bad := func(msg string) []resource.FieldError { return []resource.FieldError{{Path: key, Message: msg}} }
	switch {
	case s == "":
		return bad(fmt.Sprintf("must not be empty: %s needs a name", an(what)))
	case !utf8.ValidString(s):
		return bad(fmt.Sprintf("%q is not valid UTF-8", s))
	case short && len(s) > maxShortString:
		return bad(fmt.Sprintf("is %d bytes long; %s name has at most %d", len(s), an(what), maxShortString))
	case reserved && strings.HasPrefix(s, "amq."):
		return bad(fmt.Sprintf("%q starts with \"amq.\", which RabbitMQ reserves for its own %ss", s, what))
	}
	return nil
}

// an prefixes word with its indefinite article.
func an(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// checkTags requires tags to be non-empty strings without commas (the API joins them with commas).
func checkTags(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	list, ok := kit.Known(props["tags"], unknown).([]any)
	if !ok {
		return nil
	}
	var errs []resource.FieldError
	seen := map[string]int{}
	for i, e := range list {
		s, ok := kit.KnownString(e, unknown)
		if !ok {
			continue
		}
		path := fmt.Sprintf("tags[%d]", i)
		switch j, dup := seen[s]; {
		case strings.TrimSpace(s) == "":
			errs = append(errs, resource.FieldError{Path: path, Message: "must not be empty"})
		case strings.Contains(s, ","):
			errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf("%q holds a comma, which separates tags in the RabbitMQ API", s)})
		case s != strings.TrimSpace(s):
			errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf("%q has leading or trailing blanks, which RabbitMQ drops", s)})
		case dup:
			errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf("duplicates tags[%d] %q", j, s)})
		default:
			seen[s] = i
		}
	}
	return errs
}

// checkRegexp requires a known string property to be a regular expression that compiles.
//
// RabbitMQ compiles it with Erlang's re module (PCRE), and Go's regexp/syntax (RE2) is only close to it:
// PCRE has lookarounds ("^(?!amq\\.).*", common in policies), backreferences, possessive quantifiers
// and other syntax RE2 rejects. So only the errors PCRE shares are reported: a missing or unexpected
// parenthesis, a missing bracket, a repetition of nothing, a trailing backslash and a bad character
// range. Whatever passes may still be refused by the broker with 400 and its own reason.
func checkRegexp(props resource.Properties, unknown resource.IsUnknownFunc, key string) []resource.FieldError {
	s, ok := kit.KnownString(props[key], unknown)
	if !ok {
		return nil
	}
	_, err := syntax.Parse(s, syntax.Perl)
	var se *syntax.Error
	if err == nil || !errors.As(err, &se) {
		return nil
	}
	switch se.Code {
	case syntax.ErrMissingParen, syntax.ErrUnexpectedParen, syntax.ErrMissingBracket,
		syntax.ErrMissingRepeatArgument, syntax.ErrTrailingBackslash, syntax.ErrInvalidCharRange:
		return []resource.FieldError{{Path: key, Message: fmt.Sprintf("%q is not a valid regular expression: %s", s, se.Code)}}
	}
	return nil
}

// checkNotEmptyObject requires a known object property to have at least one key.
func checkNotEmptyObject(props resource.Properties, unknown resource.IsUnknownFunc, key, why string) []resource.FieldError {
	if m, ok := kit.Known(props[key], unknown).(map[string]any); ok && len(m) == 0 {
		return []resource.FieldError{{Path: key, Message: "must not be empty: " + why}}
	}
	return nil
}

// TargetLookup resolves a binding's {ref, attr} tokens to the resources they point at; see
// resource.TargetLookup.
type TargetLookup = resource.TargetLookup

// CheckBindingVhosts reports a binding whose source exchange or destination lives in another vhost than
// the binding, which RabbitMQ would refuse at deploy with 404 ("no exchange … in vhost …"). props are the
// binding's properties as written in the template; lookup resolves its {ref, attr} tokens.
//
// The adapter's own schema check cannot do this: it sees one resource, and a binding names its source
// and destination, not their vhosts. The assembly validator can, by calling this function with a
// lookup over the stack's resources. A source or destination that is a token pointing at a
// RabbitMQ::Broker::Exchange or RabbitMQ::Broker::Queue is compared by vhost: both vhosts literal
// strings, or both tokens of the same RabbitMQ::Broker::VirtualHost whose name is literal, are resolved to
// names; vhosts that are still unknown are not compared. Paths are "source" and "destination".
func CheckBindingVhosts(props resource.Properties, lookup TargetLookup) []resource.FieldError {
	if lookup == nil {
		return nil
	}
	vhost, ok := vhostName(props["vhost"], lookup)
	if !ok {
		return nil
	}
	var errs []resource.FieldError
	for _, key := range []string{"source", "destination"} {
		typ, target, ok := lookup(props[key])
		if !ok || (typ != TypeExchange && typ != TypeQueue) {
			continue
		}
		if tv, ok := vhostName(target["vhost"], lookup); ok && tv != vhost {
			name, _ := target["name"].(string)
			what := "exchange"
			if typ == TypeQueue {
				what = "queue"
			}
			errs = append(errs, resource.FieldError{Path: key, Message: fmt.Sprintf(
				"the %s %q is in vhost %q, but the binding is in vhost %q; a binding connects an exchange to a queue or exchange of its own vhost",
				what, name, tv, vhost)})
		}
	}
	return errs
}

// vhostName resolves a vhost property: a literal string; a token {ref, attr: "name"} of a VirtualHost
// whose name is literal; or a token {ref, attr: "vhost"} of another RabbitMQ resource whose vhost
// resolves (at most a few levels deep).
func vhostName(v any, lookup TargetLookup) (string, bool) {
	for range 4 {
		if s, ok := v.(string); ok {
			return s, true
		}
		typ, target, ok := lookup(v)
		if !ok {
			return "", false
		}
		token, _ := v.(map[string]any)
		attr, _ := token["attr"].(string)
		switch {
		case typ == TypeVirtualHost && attr == "name":
			v = target["name"]
		case typ != TypeVirtualHost && typ != TypeUser && strings.HasPrefix(typ, "RabbitMQ::") && attr == "vhost":
			v = target["vhost"]
		default:
			return "", false
		}
	}
	return "", false
}
