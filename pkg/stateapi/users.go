package stateapi

// DefaultOrganizationResponse is the answer of GET /api/user/organizations/default; it mirrors
// apitype.GetDefaultOrganizationResponse, whose fields have no JSON tags: GitHubLogin is the
// organization's name (the Pulumi CLI reads it to complete a stack name without one; empty when the token
// reaches no organization), Messages what to show the user about it (always empty here).
type DefaultOrganizationResponse struct {
	GitHubLogin string
	Messages    []string
}
