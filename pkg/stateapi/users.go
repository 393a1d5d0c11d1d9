package stateapi

// User is the answer of GET /api/user: the API token as a user, with the organizations it reaches (the
// server's default organization first when it reaches it). The Pulumi CLI reads it with `pulumi whoami`
// and at login; it mirrors the fields of the CLI's serviceUser (pkg/backend/httpstate/client of
// github.com/pulumi/pulumi/pkg/v3; apitype has no such type) that the service answers. 401 for an
// unknown token.
type User struct {
	// ID, GitHubLogin and Name are the token's name.
	ID          string `json:"id"`
	GitHubLogin string `json:"githubLogin"`
	Name        string `json:"name"`
	// Email and AvatarURL are always "".
	Email     string `json:"email"`
	AvatarURL string `json:"avatarUrl"`
	// Organizations is never null.
	Organizations []UserOrganization `json:"organizations"`
	// Identities is always [].
	Identities []string `json:"identities"`
}

// UserOrganization is an organization of a User; it mirrors the githubLogin and name of the Pulumi CLI's
// serviceUserInfo. Both are the organization's name.
type UserOrganization struct {
	GitHubLogin string `json:"githubLogin"`
	Name        string `json:"name"`
}

// DefaultOrganizationResponse is the answer of GET /api/user/organizations/default; it mirrors
// apitype.GetDefaultOrganizationResponse, whose fields have no JSON tags: GitHubLogin is the
// organization's name (the Pulumi CLI reads it to complete a stack name without one; empty when the token
// reaches no organization), Messages what to show the user about it (always empty here).
type DefaultOrganizationResponse struct {
	GitHubLogin string
	Messages    []string
}
