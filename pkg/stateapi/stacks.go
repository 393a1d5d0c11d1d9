package stateapi

// CreateStackRequest mirrors the fields of apitype.CreateStackRequest that the service reads: the body of
// POST /api/stacks/{org}/{project}. The answer is 200 with a CreateStackResponse; 400 for an invalid
// stack name (Pulumi's rules; never . or ..); 409 when the stack exists.
type CreateStackRequest struct {
	StackName string `json:"stackName"`
	// Tags are the stack's first tags.
	Tags map[string]string `json:"tags,omitempty"`
}

// CreateStackResponse mirrors apitype.CreateStackResponse: always {} (the service has no messages).
type CreateStackResponse struct{}

// Stack mirrors the fields of apitype.Stack that the service answers: GET /api/stacks/{org}/{project}/{stack};
// 404 when the stack does not exist.
type Stack struct {
	// ID is "org/project/stack".
	ID          string `json:"id"`
	OrgName     string `json:"orgName"`
	ProjectName string `json:"projectName"`
	StackName   string `json:"stackName"`
	// CurrentOperation describes the active update, if any.
	CurrentOperation *OperationStatus `json:"currentOperation,omitempty"`
	// ActiveUpdate is the ID of the active update, else of the latest one (as the Pulumi service answers:
	// `pulumi cancel` then reports that it completed), or "" for a stack never updated.
	ActiveUpdate string            `json:"activeUpdate"`
	Tags         map[string]string `json:"tags,omitempty"`
	// Version is the stack's checkpoint count.
	Version int64 `json:"version"`
}

// OperationStatus mirrors apitype.OperationStatus: the active update of a Stack.
type OperationStatus struct {
	// Kind is the update's kind (update, preview, refresh, destroy, import).
	Kind string `json:"kind"`
	// Author is the name of the API token that created the update.
	Author string `json:"author"`
	// Started is when the update was created, in Unix seconds.
	Started int64 `json:"started"`
}

// ListStacksResponse mirrors apitype.ListStacksResponse: the answer of GET
// /api/user/stacks?organization=O&project=P, every matching stack of the token's organizations in one
// page (ContinuationToken is always absent), ordered by organization, project and name.
type ListStacksResponse struct {
	// Stacks is never null.
	Stacks            []StackSummary `json:"stacks"`
	ContinuationToken *string        `json:"continuationToken,omitempty"`
}

// StackSummary mirrors the fields of apitype.StackSummary that the service answers.
type StackSummary struct {
	OrgName     string `json:"orgName"`
	ProjectName string `json:"projectName"`
	StackName   string `json:"stackName"`
	// LastUpdate is when the stack's last update started, in Unix seconds; absent for a stack never
	// updated.
	LastUpdate *int64 `json:"lastUpdate,omitempty"`
	// ResourceCount is the number of resources of the stack's state; absent with LastUpdate.
	ResourceCount *int64 `json:"resourceCount,omitempty"`
}

// StackRenameRequest mirrors apitype.StackRenameRequest: the body of POST
// /api/stacks/{org}/{project}/{stack}/rename. An empty NewProject keeps the project.
type StackRenameRequest struct {
	NewName    string `json:"newName"`
	NewProject string `json:"newProject"`
}
