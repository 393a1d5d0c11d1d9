package multipass

import (
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/cdkx-dev/cdkx/pkg/text"
)

// States of an instance as `info` and `list` name them (format::status_string_for in canonical/multipass
// src/client/cli/formatter/format_utils.cpp); only those cdkx acts on.
const (
	StateRunning    = "Running"
	StateStarting   = "Starting"
	StateRestarting = "Restarting"
	StateDeleted    = "Deleted" // deleted but not purged: the name stays taken until `multipass purge`
)

// versionReply is `multipass version --format json` (JsonFormatter::format(VersionReply) in
// src/client/cli/formatter/json_formatter.cpp): {"multipass": "1.14.0", "multipassd": "1.14.0"}, and an
// "update" object when one is available. "multipassd" is missing when the daemon did not answer.
type versionReply struct {
	Client string `json:"multipass"`
	Daemon string `json:"multipassd"`
}

// infoReply is `multipass info NAME --format json` (generate_instance_info_report in json_formatter.cpp):
// {"errors": [], "info": {"NAME": {"state": "Running", "ipv4": ["10.1.2.3"], "cpu_count": "1",
// "memory": {"used": 123, "total": 456}, "disks": {"sda1": {"used": "…", "total": "…"}}, "mounts":
// {…}, …}}}. Only what cdkx uses is decoded: the other fields' types vary between Multipass versions.
type infoReply struct {
	Info map[string]instanceInfo `json:"info"`
}

// instanceInfo is one instance of an infoReply.
type instanceInfo struct {
	State string   `json:"state"`
	IPv4  []string `json:"ipv4"`
}

// ipAddress is the instance's first IPv4 address, "" when it has none (stopped, or still starting).
// Multipass lists the default interface's address first.
func (i instanceInfo) ipAddress() string {
	for _, s := range i.IPv4 {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return a.String()
		}
	}
	return ""
}

// networksReply is `multipass networks --format json` (JsonFormatter::format(NetworksReply)):
// {"list": [{"name": "en0", "type": "wifi", "description": "Wi-Fi"}]}.
type networksReply struct {
	List []struct {
		Name string `json:"name"`
	} `json:"list"`
}

// decodeJSON decodes a command's stdout into v; an error quotes the start of what it printed.
func decodeJSON(args []string, stdout []byte, v any) error {
	if err := json.Unmarshal(stdout, v); err != nil {
		return fmt.Errorf("%s printed what is not the JSON cdkx expects (%v): %s", commandLine(args), err,
			text.ProviderMessage(text.Cap(string(stdout), 256)))
	}
	return nil
}
