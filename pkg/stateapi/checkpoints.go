package stateapi

import "encoding/json"

// PatchUpdateCheckpointRequest is the body of PATCH …/{kind}/{id}/checkpoint (apitype): the whole
// deployment, stored as {"version":Version,"deployment":Deployment} after compaction. Deployment must be
// a deployment object (apitype.DeploymentV3); anything else is a 400 that stores nothing.
type PatchUpdateCheckpointRequest struct {
	IsInvalid  bool            `json:"isInvalid"`
	Version    int             `json:"version"`
	Features   []string        `json:"features,omitempty"`
	Deployment json.RawMessage `json:"deployment,omitempty"`
}

// PatchUpdateVerbatimCheckpointRequest is the body of PATCH …/checkpointverbatim (apitype): an
// UntypedDeployment kept byte for byte. (update, SequenceNumber) is an idempotency key: a repeat is
// ignored.
type PatchUpdateVerbatimCheckpointRequest struct {
	Version           int             `json:"version"`
	UntypedDeployment json.RawMessage `json:"untypedDeployment,omitempty"`
	SequenceNumber    int64           `json:"sequenceNumber"`
}

// PatchUpdateCheckpointDeltaRequest is the body of PATCH …/checkpointdelta (apitype): DeploymentDelta,
// a JSON list of TextEdit, turns the update's last checkpoint into the new one, whose lowercase hex
// SHA-256 is CheckpointHash.
type PatchUpdateCheckpointDeltaRequest struct {
	Version         int             `json:"version"`
	CheckpointHash  string          `json:"checkpointHash"`
	SequenceNumber  int64           `json:"sequenceNumber"`
	DeploymentDelta json.RawMessage `json:"deploymentDelta,omitempty"`
}

// TextEdit is one edit of a deploymentDelta, as the Pulumi CLI sends it (gotextdiff's TextEdit:
// capitalised keys): the bytes [Span.Start.Offset, Span.End.Offset) of the previous text are replaced
// by NewText. Offsets are byte offsets; lines and columns are ignored.
type TextEdit struct {
	Span    TextSpan `json:"Span"`
	NewText string   `json:"NewText"`
}

// TextSpan is the span of a TextEdit.
type TextSpan struct {
	URI   string       `json:"uri"`
	Start TextPosition `json:"start"`
	End   TextPosition `json:"end"`
}

// TextPosition is one end of a TextSpan; Offset (bytes) is what counts.
type TextPosition struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Offset int `json:"offset"`
}
