package server

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
	"github.com/jackc/pgx/v5"
)

// Names of stateapi types the package's tests decode into.
type (
	userInfo     = stateapi.User
	stackSummary = stateapi.StackSummary
)

// user answers GET /api/user (stateapi.User): the token's name, and the organizations it reaches (the default
// organization first when it reaches it). A token of every organization lists the default one and every
// organization that has a stack.
func (s *Server) user(r *http.Request, c *call) (any, error) {
	names, err := s.userOrgs(r.Context(), c)
	if err != nil {
		return nil, err
	}
	orgs := make([]stateapi.UserOrganization, len(names))
	for i, n := range names {
		orgs[i] = stateapi.UserOrganization{GitHubLogin: n, Name: n}
	}
	return stateapi.User{ID: c.user, GitHubLogin: c.user, Name: c.user, Organizations: orgs, Identities: []string{}}, nil
}

// userOrgs returns the organizations the token of c reaches, the default one first when it does, then
// the others sorted.
func (s *Server) userOrgs(ctx context.Context, c *call) ([]string, error) {
	var others []string
	if c.scope.all() {
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT org FROM svc_stacks WHERE org <> $1 ORDER BY org`, s.org)
		if err != nil {
			return nil, err
		}
		if others, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, err
		}
	} else {
		for _, o := range c.scope.orgs {
			if o != s.org {
				others = append(others, o)
			}
		}
		slices.Sort(others)
	}
	if c.scope.reaches(s.org) {
		return append([]string{s.org}, others...), nil
	}
	return others, nil
}

// defaultOrg answers stateapi.DefaultOrganizationResponse: the server's default organization when the
// token reaches it, else the first the token reaches.
func (s *Server) defaultOrg(r *http.Request, c *call) (any, error) {
	org := s.org
	if !c.scope.reaches(org) && len(c.scope.orgs) > 0 {
		org = slices.Min(c.scope.orgs)
	}
	return stateapi.DefaultOrganizationResponse{GitHubLogin: org, Messages: []string{}}, nil
}

// listStacks answers GET /api/user/stacks?organization=&project= (stateapi.ListStacksResponse) with every matching stack of the
// token's organizations (one page).
func (s *Server) listStacks(r *http.Request, c *call) (any, error) {
	q := r.URL.Query()
	var orgs []string // nil: every organization
	if !c.scope.all() {
		orgs = c.scope.orgs
	}
	rows, err := s.pool.Query(r.Context(), `SELECT org, project, name, last_update, resource_count FROM svc_stacks
WHERE ($1 = '' OR org = $1) AND ($2 = '' OR project = $2) AND ($3::text[] IS NULL OR org = ANY($3))
ORDER BY org, project, name`,
		q.Get("organization"), q.Get("project"), orgs)
	if err != nil {
		return nil, err
	}
	stacks := []stateapi.StackSummary{}
	for rows.Next() {
		var sum stateapi.StackSummary
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
	return stateapi.ListStacksResponse{Stacks: stacks}, nil
}
