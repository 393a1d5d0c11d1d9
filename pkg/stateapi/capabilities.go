package stateapi

import "encoding/json"

// CapabilitiesResponse mirrors apitype.CapabilitiesResponse: the answer of GET /api/capabilities.
type CapabilitiesResponse struct {
	Capabilities []APICapabilityConfig `json:"capabilities"`
}

// APICapabilityConfig mirrors apitype.APICapabilityConfig: one capability of the service, e.g.
// "delta-checkpoint-uploads-v2" version 2 with {"checkpointCutoffSizeBytes": N} (the Pulumi CLI then
// sends checkpoints larger than N bytes as deltas, PATCH …/checkpointdelta).
type APICapabilityConfig struct {
	Capability    string          `json:"capability"`
	Version       int             `json:"version,omitempty"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
}
