package stateapi

import (
	"encoding/json"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// CommitRequest is the body of PATCH /api/stacks/{org}/{project}/{stack}/update/{id}/commit, the cdkx
// extension of checkpointdelta that also carries the deployment's events: the edits that turn the
// stack's checkpoint at BaseVersion into the new one (DeploymentDelta, a JSON list of TextEdit), or the
// new checkpoint's exact text (DeploymentText: its bytes are kept as they are), and the SHA-256
// (lowercase hex) of the result. The result must be a cdkx document (DocumentHeader, DocumentResource):
// else 400 and nothing is stored. SequenceNumber (1 or more) makes a retry a no-op that answers the
// version the first attempt stored (CommitResponse); BaseVersion other than the stack's version is a 409.
// ResourceCount is ignored by the server (it counts the document's resources itself).
type CommitRequest struct {
	SequenceNumber  int64           `json:"sequenceNumber"`
	BaseVersion     int64           `json:"baseVersion"`
	CheckpointHash  string          `json:"checkpointHash"`
	DeploymentDelta json.RawMessage `json:"deploymentDelta,omitempty"`
	DeploymentText  *string         `json:"deploymentText,omitempty"`
	ResourceCount   int             `json:"resourceCount"`
	DeploymentID    string          `json:"deploymentId"`
	Events          []state.Event   `json:"events,omitempty"`
}

// CommitResponse answers a CommitRequest: the stack's version the commit stored.
type CommitResponse struct {
	Version int64 `json:"version"`
}

// A cdkx stack is stored as a Pulumi UntypedDeployment (version 3) whose deployment carries, beside the
// manifest, a "cdkx" object (DocumentHeader) and whose resources are DocumentResource objects, ordered
// by logical ID, one per line:
//
//	{"version":3,"deployment":{"manifest":{…},"cdkx":HEADER,"resources":[
//	RESOURCE 1,
//	…
//	RESOURCE N
//	]}}

// DocumentFormat is the version of the cdkx document layout, in DocumentHeader.Format.
const DocumentFormat = 1

// DocumentHeader is the "cdkx" object of a stored cdkx document: the stack's own fields.
type DocumentHeader struct {
	Format       int                 `json:"format"`
	Stack        string              `json:"stack"`
	Status       string              `json:"status,omitempty"`
	Outputs      resource.Properties `json:"outputs"`
	Dependencies []string            `json:"dependencies,omitempty"`
	UpdatedAt    time.Time           `json:"updatedAt"`
}

// DocumentResource is one resource of a cdkx document, Pulumi-shaped (urn, custom, id, type, inputs,
// outputs, dependencies as URNs) with what only cdkx records under "cdkx". URN, Type and
// Cdkx.LogicalID are required.
type DocumentResource struct {
	URN          string                `json:"urn"`
	Custom       bool                  `json:"custom"`
	ID           string                `json:"id,omitempty"`
	Type         string                `json:"type"`
	Inputs       resource.Properties   `json:"inputs"`
	Outputs      resource.Properties   `json:"outputs"`
	Dependencies []string              `json:"dependencies,omitempty"`
	Cdkx         DocumentResourceExtra `json:"cdkx"`
}

// DocumentResourceExtra is what a state.Resource records beyond the Pulumi fields.
type DocumentResourceExtra struct {
	LogicalID    string                  `json:"logicalId"`
	Type         string                  `json:"type"`
	Provider     string                  `json:"provider"`
	Dependencies []string                `json:"dependencies,omitempty"`
	Status       string                  `json:"status"`
	Pending      *state.PendingOperation `json:"pending,omitempty"`
	Replaced     []state.Object          `json:"replaced,omitempty"`
	UpdatedAt    time.Time               `json:"updatedAt"`
}
