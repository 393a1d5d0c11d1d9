package hcloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// physicalID parses a physical ID that is a Hetzner ID ("42").
func physicalID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s: physical ID %q is not a Hetzner ID (a positive integer)", Name, s)
	}
	return id, nil
}

// locateByName finds the object of collection named props["name"] (GET /{collection}?name=…) and
// returns its ID as the physical ID, or an error wrapping resource.ErrNotFound.
func (p *Provider) locateByName(ctx context.Context, collection string, props resource.Properties) (string, error) {
	id, err := p.c.findByName(ctx, collection, str(props, "name"))
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(id, 10), nil
}

// readLabels sets props["labels"] to the live labels when the inputs had labels or the object has some,
// so that an object without labels and a template without them read back alike.
func readLabels(props, recorded resource.Properties, live map[string]string) {
	if _, ok := recorded["labels"]; ok || len(live) > 0 {
		props["labels"] = labelsValue(live)
	}
}

// checkCIDR requires the known string props[key] to be a CIDR (an IP prefix such as 10.0.0.0/16, with no
// host bits set); private also requires an RFC 1918 IPv4 range of /24 or larger (Hetzner networks).
func checkCIDR(props resource.Properties, unknown resource.IsUnknownFunc, key string, private bool) []resource.FieldError {
	s, ok := kit.KnownString(props[key], unknown)
	if !ok {
		return nil
	}
	bad := func(msg string) []resource.FieldError { return []resource.FieldError{{Path: key, Message: msg}} }
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return bad(fmt.Sprintf("%q is not a CIDR like 10.0.0.0/16", s))
	}
	if pfx.Masked() != pfx {
		return bad(fmt.Sprintf("%q has host bits set; Hetzner wants the network address, %s", s, pfx.Masked()))
	}
	if private {
		rfc1918 := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16")}
		if !pfx.Addr().Is4() || !slices.ContainsFunc(rfc1918, func(r netip.Prefix) bool { return r.Bits() <= pfx.Bits() && r.Contains(pfx.Addr()) }) {
			return bad(fmt.Sprintf("%q is not a private IPv4 range (RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)", s))
		}
		if pfx.Bits() > 24 {
			return bad(fmt.Sprintf("%q is smaller than /24, the smallest network Hetzner accepts", s))
		}
	}
	return nil
}

// idOf reads a Hetzner ID: a JSON integer (json.Number or a Go integer) or an integer string such as
// "42". ok is false when v is absent (nil); err names the problem when v is something else.
func idOf(v any) (id int64, ok bool, err error) {
	var s string
	switch v := v.(type) {
	case nil:
		return 0, false, nil
	case json.Number:
		s = string(v)
	case string:
		s = strings.TrimSpace(v)
	case int:
		return int64(v), true, nil
	case int64:
		return v, true, nil
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true, nil
		}
		return 0, false, fmt.Errorf("must be an integer ID, got %v", v)
	default:
		return 0, false, fmt.Errorf("must be an integer ID, got %T", v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false, fmt.Errorf("must be a positive integer ID, got %q", s)
	}
	return n, true, nil
}

// propID returns the ID in props[key]; a missing one is an error naming key.
func propID(props resource.Properties, key string) (int64, error) {
	id, ok, err := idOf(props[key])
	if err != nil {
		return 0, fmt.Errorf("%s: property %s %w", Name, key, err)
	}
	if !ok {
		return 0, fmt.Errorf("%s: property %s is required", Name, key)
	}
	return id, nil
}

// checkIDs reports every key of ids whose known value is not an integer ID (list values are checked
// element by element).
func checkIDs(props resource.Properties, unknown resource.IsUnknownFunc, ids []string) []resource.FieldError {
	var errs []resource.FieldError
	for _, key := range ids {
		v := props[key]
		if v == nil || kit.IsUnknown(v, unknown) {
			continue
		}
		if list, ok := v.([]any); ok {
			for i, e := range list {
				if kit.IsUnknown(e, unknown) {
					continue
				}
				if _, _, err := idOf(e); err != nil {
					errs = append(errs, resource.FieldError{Path: fmt.Sprintf("%s[%d]", key, i), Message: err.Error()})
				}
			}
			continue
		}
		if _, _, err := idOf(v); err != nil {
			errs = append(errs, resource.FieldError{Path: key, Message: err.Error()})
		}
	}
	return errs
}

// num is an integer output value, as decoded JSON holds it.
func num(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// str returns props[key] as a string ("" when absent or not a string).
func str(props resource.Properties, key string) string {
	s, _ := props[key].(string)
	return s
}

// boolean returns props[key] as a bool; ok is false when absent.
func boolean(props resource.Properties, key string) (v, ok bool) {
	v, ok = props[key].(bool)
	return v, ok
}

// labelsOf returns props["labels"] as Hetzner's string map (empty, never nil, when absent).
func labelsOf(props resource.Properties) map[string]string {
	out := map[string]string{}
	if m, ok := props["labels"].(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// labelsValue is labels as an output or property value: an object of strings.
func labelsValue(labels map[string]string) map[string]any {
	out := make(map[string]any, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// labelsSchema is the schema of every type's labels property.
var labelsSchema = resource.PropertySchema{Kind: resource.KindObject,
	Description: "Labels: an object of string keys and values (https://docs.hetzner.cloud/#labels); changes update in place"}

// idSchema is the schema of a property that holds a Hetzner ID.
func idSchema(desc string, required, createOnly bool) resource.PropertySchema {
	return resource.PropertySchema{Kind: resource.KindAny, Required: required, CreateOnly: createOnly,
		Description: desc + " (an integer ID; an integer string such as \"42\" is accepted)"}
}

// noted is p with an UpdateNote: the harm an in-place change of the property does, for plans to show.
func noted(p resource.PropertySchema, note string) resource.PropertySchema {
	p.UpdateNote = note
	return p
}

// outputs returns the output names sorted and without duplicates, for Schema.Outputs.
func outputs(names ...string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}

// checkLabels requires every known label value to be a string (Hetzner labels are string → string).
func checkLabels(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	m, ok := props["labels"].(map[string]any)
	if !ok {
		return nil
	}
	var errs []resource.FieldError
	for k, v := range m {
		if kit.IsUnknown(v, unknown) {
			continue
		}
		if _, ok := v.(string); !ok {
			errs = append(errs, resource.FieldError{Path: "labels." + k, Message: fmt.Sprintf("must be a string (Hetzner labels map strings to strings), got %v", v)})
		}
	}
	return errs
}
