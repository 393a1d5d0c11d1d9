package hcloud

import (
	"bytes"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// The checks of this file look across a stack (resource.Schema.CheckStack) for what Hetzner refuses with
// a 422 in the middle of a deploy, after other objects were made: a primary IP assigned to a server that
// has one of that type already, and a server attached twice to one network. They see properties as
// written, so they compare IDs as written too: equal literals (7 and "7" alike) or equal tokens. A value
// they cannot know before deploy is never an error.

// checkPrimaryIPAssignmentStack refuses an assignment of a primary IP to a server that gets one of the
// same type by default (publicNet.enableIpv4/enableIpv6 not false: Hetzner answers 422
// server_has_ipv4/server_has_ipv6) and a second assignment of one type to one server.
func checkPrimaryIPAssignmentStack(props resource.Properties, stack resource.StackView) []resource.FieldError {
	ipType := primaryIPType(props["primaryIpId"], stack.Lookup)
	var errs []resource.FieldError
	if typ, server, ok := stack.Lookup(props["assigneeId"]); ok && typ == TypeServer {
		name := describeRef(props["assigneeId"])
		v4, known4 := publicNetEnabled(server, "enableIpv4")
		v6, known6 := publicNetEnabled(server, "enableIpv6")
		switch {
		case ipType == "ipv4" && known4 && v4, ipType == "ipv6" && known6 && v6:
			flag := map[string]string{"ipv4": "enableIpv4", "ipv6": "enableIpv6"}[ipType]
			errs = append(errs, resource.FieldError{Path: "assigneeId", Message: fmt.Sprintf(
				"server %s gets a primary %s of its own when it is created (its publicNet.%s is not false), and Hetzner refuses a second one "+
					"(422 server_has_%s): set publicNet.%s to false on server %s, or remove this assignment",
				name, ipName(ipType), flag, ipType, flag, name)})
		case ipType == "" && known4 && v4 && known6 && v6:
			errs = append(errs, resource.FieldError{Path: "assigneeId", Message: fmt.Sprintf(
				"server %s gets a primary IPv4 and a primary IPv6 of its own when it is created (its publicNet.enableIpv4 and enableIpv6 are not false), "+
					"and Hetzner refuses a second primary IP of either type (422 server_has_ipv4/server_has_ipv6): set publicNet.enableIpv4 "+
					"(for an IPv4) or publicNet.enableIpv6 (for an IPv6) to false on server %s, or remove this assignment", name, name)})
		}
	}
	if ipType == "" || stack.OfType == nil {
		return errs
	}
	for _, other := range stack.OfType(TypePrimaryIPAssignment) {
		if other.LogicalID == stack.Self {
			break // report the second one, not the first
		}
		if sameID(other.Properties["assigneeId"], props["assigneeId"]) && primaryIPType(other.Properties["primaryIpId"], stack.Lookup) == ipType {
			errs = append(errs, resource.FieldError{Path: "assigneeId", Message: fmt.Sprintf(
				"assigns a second primary %s to server %s, which %s assigns one already; a Hetzner server has at most one primary IP of each type "+
					"(422 server_has_%s): remove one of the two assignments", ipName(ipType), describeRef(props["assigneeId"]), other.LogicalID, ipType)})
			break
		}
	}
	return errs
}

// checkNetworkAttachmentStack refuses an attachment of a server to a network that the server's own
// networks property attaches it to already, and a second attachment of one server to one network (422
// server_already_attached).
func checkNetworkAttachmentStack(props resource.Properties, stack resource.StackView) []resource.FieldError {
	var errs []resource.FieldError
	if typ, server, ok := stack.Lookup(props["serverId"]); ok && typ == TypeServer {
		// A server of another stack writes its networks with that stack's {ref, attr} tokens: only
		// literals and stackRefs mean the same there and here.
		crossStack := isStackRef(props["serverId"])
		networks, _ := server["networks"].([]any)
		for _, n := range networks {
			if crossStack && isRef(n) {
				continue
			}
			if sameID(n, props["networkId"]) {
				name := describeRef(props["serverId"])
				errs = append(errs, resource.FieldError{Path: "networkId", Message: fmt.Sprintf(
					"server %s is attached to this network already by its networks property, and Hetzner refuses a second attachment "+
						"(422 server_already_attached): remove the network from the networks of server %s, or remove this attachment", name, name)})
				break
			}
		}
	}
	if stack.OfType == nil {
		return errs
	}
	for _, other := range stack.OfType(TypeNetworkAttachment) {
		if other.LogicalID == stack.Self {
			break
		}
		if sameID(other.Properties["serverId"], props["serverId"]) && sameID(other.Properties["networkId"], props["networkId"]) {
			errs = append(errs, resource.FieldError{Path: "networkId", Message: fmt.Sprintf(
				"attaches server %s to this network a second time, after %s; Hetzner refuses a second attachment (422 server_already_attached): "+
					"remove one of the two", describeRef(props["serverId"]), other.LogicalID)})
			break
		}
	}
	return errs
}

// primaryIPType returns the type (ipv4, ipv6) of the primary IP that id points at, when it is a token of a
// PrimaryIp whose type is written literally; "" when that is not known before deploy.
func primaryIPType(id any, lookup resource.TargetLookup) string {
	typ, ip, ok := lookup(id)
	if !ok || typ != TypePrimaryIP {
		return ""
	}
	if t, ok := ip["type"].(string); ok && (t == "ipv4" || t == "ipv6") {
		return t
	}
	return ""
}

// publicNetEnabled reports whether a server's properties enable flag ("enableIpv4", "enableIpv6") of its
// publicNet, as Hetzner does by default; known is false when a token decides it.
func publicNetEnabled(server resource.Properties, flag string) (enabled, known bool) {
	pn, present := server["publicNet"]
	if !present || pn == nil {
		return true, true
	}
	m, ok := pn.(map[string]any)
	if !ok {
		return false, false
	}
	switch v := m[flag].(type) {
	case nil:
		return true, true
	case bool:
		return v, true
	}
	return false, false
}

// sameID reports whether two ID values as written name the same object for certain: equal integer
// literals (7, "7") or equal tokens. Absent values never match.
func sameID(a, b any) bool {
	if a == nil || b == nil {
		return false
	}
	x, okA := intProp(a)
	y, okB := intProp(b)
	if okA || okB {
		return okA && okB && x == y
	}
	return bytes.Equal(resource.Canonical(a), resource.Canonical(b))
}

// describeRef names the object a token points at for a message: its logical ID, or its stack output.
func describeRef(v any) string {
	m, _ := v.(map[string]any)
	if ref, ok := m["ref"].(string); ok {
		return ref
	}
	if s, ok := m["stackRef"].(string); ok {
		out, _ := m["outputKey"].(string)
		return s + "." + out
	}
	return fmt.Sprint(v)
}

func isRef(v any) bool {
	m, _ := v.(map[string]any)
	_, ok := m["ref"]
	return ok
}

func isStackRef(v any) bool {
	m, _ := v.(map[string]any)
	_, ok := m["stackRef"]
	return ok
}

func ipName(t string) string {
	if t == "ipv6" {
		return "IPv6"
	}
	return "IPv4"
}
