package assembly

import (
	"fmt"
	"slices"
	"sort"
)

// Token is a reference inside a property or output value: {"ref": ID, "attr": NAME} (same stack) or
// {"stackRef": STACK, "outputKey": KEY} (another stack). Exactly one of Ref and StackRef is set.
type Token struct {
	Ref       string
	Attr      string
	StackRef  string
	OutputKey string
}

// String renders the token as it appears in JSON, e.g. `{ref: Zone, attr: zoneId}`.
func (t Token) String() string {
	if t.StackRef != "" {
		return fmt.Sprintf("{stackRef: %s, outputKey: %s}", t.StackRef, t.OutputKey)
	}
	if t.Attr == "" {
		return fmt.Sprintf("{ref: %s}", t.Ref)
	}
	return fmt.Sprintf("{ref: %s, attr: %s}", t.Ref, t.Attr)
}

// AsToken reports whether v is a token: an object with exactly the keys ref (string) and attr (string),
// or stackRef (string) and outputKey (string). A lone {"ref": ID} is returned with ok and an empty Attr,
// so that validation can report it; it is an error at deploy.
func AsToken(v any) (Token, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 || len(m) > 2 {
		return Token{}, false
	}
	return tokenFrom(len(m), func(k string) (string, bool) {
		s, ok := m[k].(string)
		return s, ok
	})
}

// tokenFrom is AsToken of an object of n members, whose member key str returns when it is a string.
func tokenFrom(n int, str func(key string) (string, bool)) (Token, bool) {
	switch n {
	case 1:
		if ref, ok := str("ref"); ok {
			return Token{Ref: ref}, true
		}
	case 2:
		if ref, ok := str("ref"); ok {
			if attr, ok := str("attr"); ok {
				return Token{Ref: ref, Attr: attr}, true
			}
		}
		if sr, ok := str("stackRef"); ok {
			if key, ok := str("outputKey"); ok {
				return Token{StackRef: sr, OutputKey: key}, true
			}
		}
	}
	return Token{}, false
}

// TokenAt is a token found at Path, a JSON path relative to the value searched (e.g. "records[0]"). A path
// longer than MaxPathLen is shortened in the middle (see MaxPathLen).
type TokenAt struct {
	Token
	Path string
}

// FindTokens returns every token in v, depth first, object keys in sorted order, with its path under
// prefix (joined with "." for keys and "[i]" for list elements). Its cost is linear in the size of v: the
// path is rendered only for each token found.
func FindTokens(prefix string, v any) []TokenAt {
	var out []TokenAt
	eachToken(prefix, v, func(t Token, at *jsonPath) {
		out = append(out, TokenAt{Token: t, Path: at.String()})
	})
	return out
}

// eachToken calls fn with every token in v, depth first, object keys in sorted order, and the path to it
// under prefix, which fn renders only if it needs it (at is valid only during the call).
func eachToken(prefix string, v any, fn func(t Token, at *jsonPath)) {
	at := &jsonPath{prefix: prefix}
	walkTokens(v, at, fn)
}

func walkTokens(v any, at *jsonPath, fn func(Token, *jsonPath)) {
	if t, ok := AsToken(v); ok {
		fn(t, at)
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 { // most objects of a template; in order without a sorted copy of the keys
			for k, e := range v {
				at.pushKey(k)
				walkTokens(e, at, fn)
				at.pop()
			}
			return
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			at.pushKey(k)
			walkTokens(v[k], at, fn)
			at.pop()
		}
	case []any:
		for i, e := range v {
			at.pushIndex(i)
			walkTokens(e, at, fn)
			at.pop()
		}
	}
}

// JoinPath appends key to a dotted JSON path.
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Resolve returns v with every token replaced by lookup's answer, and stops at lookup's first error. The
// token's path under path is rendered for lookup (see TokenAt). Only the lists and objects on the way to a
// token are copied; the rest of the result shares v's values (decoded values are never changed in place).
// The cost is linear in the size of v.
func Resolve(path string, v any, lookup func(at TokenAt) (any, error)) (any, error) {
	return resolve(v, &jsonPath{prefix: path}, lookup)
}

func resolve(v any, at *jsonPath, lookup func(at TokenAt) (any, error)) (any, error) {
	r, _, err := resolveShared(v, at, lookup)
	return r, err
}

// resolveShared resolves v copy-on-write: a list or object without a token below it is returned as it is,
// shared with v (decoded values are never changed in place), so that resolving a large template allocates
// only along the paths to its tokens. changed reports whether a token was resolved in v.
func resolveShared(v any, at *jsonPath, lookup func(at TokenAt) (any, error)) (r any, changed bool, err error) {
	if t, ok := AsToken(v); ok {
		r, err := lookup(TokenAt{Token: t, Path: at.String()})
		return r, true, err
	}
	switch v := v.(type) {
	case map[string]any:
		var m map[string]any
		for k, e := range v {
			at.pushKey(k)
			r, changed, err := resolveShared(e, at, lookup)
			at.pop()
			if err != nil {
				return nil, false, err
			}
			if changed {
				if m == nil {
					m = make(map[string]any, len(v))
					for k2, e2 := range v {
						m[k2] = e2
					}
				}
				m[k] = r
			}
		}
		if m == nil {
			return v, false, nil
		}
		return m, true, nil
	case []any:
		var s []any
		for i, e := range v {
			at.pushIndex(i)
			r, changed, err := resolveShared(e, at, lookup)
			at.pop()
			if err != nil {
				return nil, false, err
			}
			if changed {
				if s == nil {
					s = slices.Clone(v)
				}
				s[i] = r
			}
		}
		if s == nil {
			return v, false, nil
		}
		return s, true, nil
	}
	return v, false, nil
}
