package hcloudfake

import (
	"errors"
	"strings"
)

// selector is a parsed Hetzner label selector (https://docs.hetzner.cloud/#label-selector): terms joined
// by commas, all of which must match.
type selector []selectorTerm

type selectorTerm struct {
	key    string
	op     string // "=", "!=", "exists", "!exists", "in", "notin"
	values []string
}

// parseSelector parses `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, joined by commas.
func parseSelector(s string) (selector, error) {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, s[start:])
	var sel selector
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New("empty term in label selector")
		}
		t, err := parseTerm(p)
		if err != nil {
			return nil, err
		}
		sel = append(sel, t)
	}
	return sel, nil
}

func parseTerm(p string) (selectorTerm, error) {
	for _, op := range []string{" notin ", " in "} {
		if k, rest, ok := strings.Cut(p, op); ok {
			rest = strings.TrimSpace(rest)
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return selectorTerm{}, errors.New("set-based selector needs parentheses: " + p)
			}
			var vals []string
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				vals = append(vals, strings.TrimSpace(v))
			}
			return selectorTerm{key: strings.TrimSpace(k), op: strings.TrimSpace(op), values: vals}, nil
		}
	}
	if k, v, ok := strings.Cut(p, "!="); ok {
		return selectorTerm{key: strings.TrimSpace(k), op: "!=", values: []string{strings.TrimSpace(v)}}, nil
	}
	if k, v, ok := strings.Cut(p, "=="); ok {
		return selectorTerm{key: strings.TrimSpace(k), op: "=", values: []string{strings.TrimSpace(v)}}, nil
	}
	if k, v, ok := strings.Cut(p, "="); ok {
		return selectorTerm{key: strings.TrimSpace(k), op: "=", values: []string{strings.TrimSpace(v)}}, nil
	}
	if strings.HasPrefix(p, "!") {
		return selectorTerm{key: strings.TrimSpace(p[1:]), op: "!exists"}, nil
	}
	if strings.ContainsAny(p, " ()") {
		return selectorTerm{}, errors.New("invalid label selector term: " + p)
	}
	return selectorTerm{key: p, op: "exists"}, nil
}

func (s selector) matches(labels map[string]string) bool {
	for _, t := range s {
		v, has := labels[t.key]
		var ok bool
		switch t.op {
		case "=":
			ok = has && v == t.values[0]
		case "!=":
			ok = !has || v != t.values[0]
		case "exists":
			ok = has
		case "!exists":
			ok = !has
		case "in":
			ok = has && contains(t.values, v)
		case "notin":
			ok = !has || !contains(t.values, v)
		}
		if !ok {
			return false
		}
	}
	return true
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
