package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
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
		var err error
		if others, err = s.db.OtherOrgs(ctx, s.org); err != nil {
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
	stored, err := s.db.Stacks(r.Context(), q.Get("organization"), q.Get("project"), orgs)
	if err != nil {
		return nil, err
	}
	stacks := []stateapi.StackSummary{}
	for _, st := range stored {
		sum := stateapi.StackSummary{OrgName: st.Org, ProjectName: st.Project, StackName: st.Stack}
		last, count := st.LastUpdate, st.ResourceCount
		if last != nil {
			u := last.Unix()
			sum.LastUpdate, sum.ResourceCount = &u, &count
		}
		stacks = append(stacks, sum)
	}
	return stateapi.ListStacksResponse{Stacks: stacks}, nil
}
