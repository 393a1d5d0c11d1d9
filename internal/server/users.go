package server

import (
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// orgInfo mirrors the service's organization summary of GET /api/user.
type orgInfo struct {
	GitHubLogin string `json:"githubLogin"`
	Name        string `json:"name"`
}

// userInfo mirrors the service's GET /api/user answer (the fields the Pulumi CLI reads).
type userInfo struct {
	ID            string    `json:"id"`
	GitHubLogin   string    `json:"githubLogin"`
	Name          string    `json:"name"`
	Email         string    `json:"email"`
	AvatarURL     string    `json:"avatarUrl"`
	Organizations []orgInfo `json:"organizations"`
	Identities    []string  `json:"identities"`
}

func (s *Server) user(r *http.Request, c *call) (any, error) {
	orgs := []orgInfo{{GitHubLogin: s.org, Name: s.org}}
	rows, err := s.pool.Query(r.Context(), `SELECT DISTINCT org FROM svc_stacks WHERE org <> $1 ORDER BY org`, s.org)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		orgs = append(orgs, orgInfo{GitHubLogin: n, Name: n})
	}
	return userInfo{ID: c.user, GitHubLogin: c.user, Name: c.user, Organizations: orgs, Identities: []string{}}, nil
}

// defaultOrg mirrors apitype.GetDefaultOrganizationResponse, whose fields have no JSON tags.
func (s *Server) defaultOrg(r *http.Request, c *call) (any, error) {
	return map[string]any{"OrganizationName": s.org, "Messages": []any{}}, nil
}

// stackSummary mirrors apitype.StackSummary.
type stackSummary struct {
	OrgName       string `json:"orgName"`
	ProjectName   string `json:"projectName"`
	StackName     string `json:"stackName"`
	LastUpdate    *int64 `json:"lastUpdate,omitempty"`
	ResourceCount *int64 `json:"resourceCount,omitempty"`
}

// listStacks answers GET /api/user/stacks?organization=&project= with every matching stack (one page).
func (s *Server) listStacks(r *http.Request, c *call) (any, error) {
	q := r.URL.Query()
	rows, err := s.pool.Query(r.Context(), `SELECT org, project, name, last_update, resource_count FROM svc_stacks
WHERE ($1 = '' OR org = $1) AND ($2 = '' OR project = $2) ORDER BY org, project, name`,
		q.Get("organization"), q.Get("project"))
	if err != nil {
		return nil, err
	}
	stacks := []stackSummary{}
	for rows.Next() {
		var sum stackSummary
		var last *time.Time
		var count int64
		if err := rows.Scan(&sum.OrgName, &sum.ProjectName, &sum.StackName, &last, &count); err != nil {
			return nil, err
		}
		if last != nil {
			u := last.Unix()
			sum.LastUpdate, sum.ResourceCount = &u, &count
		}
		stacks = append(stacks, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"stacks": stacks}, nil
}
