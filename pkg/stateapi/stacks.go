package stateapi

// StackRenameRequest mirrors apitype.StackRenameRequest: the body of POST
// /api/stacks/{org}/{project}/{stack}/rename. An empty NewProject keeps the project.
type StackRenameRequest struct {
	NewName    string `json:"newName"`
	NewProject string `json:"newProject"`
}
