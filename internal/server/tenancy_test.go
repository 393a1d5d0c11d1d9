package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// dumpTables returns, as sorted lines of text, what the service stores: tokens, stacks, updates,
// checkpoints, engine events, deployments (record, owner update, claimer) and deployment events; a
// refused request must leave it as it was.
func dumpTables(t *testing.T, e *env) []string {
	t.Helper()
	rows, err := e.srv.db.Pool().Query(context.Background(), `SELECT line FROM (
  SELECT 'token ' || name || ' ' || orgs::text || ' ' || read_only FROM svc_tokens
  UNION ALL SELECT 'stack ' || org || '/' || project || '/' || name || ' v' || version || ' ' || tags::text || ' ' || coalesce(last_update::text, '-') FROM svc_stacks
  UNION ALL SELECT 'update ' || id || ' ' || kind || ' ' || status || ' ' || coalesce(lease_expires_at::text, '-') || ' ' || coalesce(heartbeat_at::text, '-') FROM svc_updates
  UNION ALL SELECT 'checkpoint ' || stack_id || ' v' || version || ' ' || update_id || ' ' || md5(coalesce(data, delta)) FROM svc_checkpoints
  UNION ALL SELECT 'event ' || update_id || ' ' || seq || ' ' || md5(data) FROM svc_events
  UNION ALL SELECT 'deployment ' || id || ' ' || stack_id || ' ' || status || ' ' || seq || ' ' || coalesce(heartbeat_at::text, '-') || ' ' ||
    coalesce(update_id, '-') || ' ' || coalesce(claimed_by, '-') || ' ' || record::text FROM svc_deployments
  UNION ALL SELECT 'deployment event ' || deployment_id || ' ' || seq || ' ' || stack_id || ' ' || data::text FROM svc_deployment_events
) d(line) ORDER BY line`)
	if err != nil {
		t.Fatalf("dump tables: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("dump tables: %v", err)
	}
	return lines
}

// tenancy is a server with stacks in two organizations, org and borg, and tokens of several scopes.
type tenancy struct {
	*env
	// API tokens (Authorization header values): teamA reaches org, teamB borg, carol org (a second
	// person), viewer org read only; e.token (alice) reaches every organization.
	teamA, teamB, carol, viewer string
}

func (e *env) mustCreateToken(name string, opts ...TokenOption) string {
	e.t.Helper()
	tok, err := e.srv.CreateToken(context.Background(), name, opts...)
	if err != nil {
		e.t.Fatalf("CreateToken(%s) = %v", name, err)
	}
	return "token " + tok
}

func newTenancy(t *testing.T) *tenancy {
	t.Helper()
	e := &tenancy{env: newEnv(t)}
	e.teamA = e.mustCreateToken("team-a", ForOrgs("org"))
	e.teamB = e.mustCreateToken("team-b", ForOrgs("borg"))
	e.carol = e.mustCreateToken("carol", ForOrgs("org"))
	e.viewer = e.mustCreateToken("viewer", ForOrgs("org"), ReadOnly())
	return e
}

// begin creates and starts an update of org/proj/stack with the API token auth and returns its ID and
// its lease's Authorization header.
func (e *tenancy) begin(stack, auth string) (string, string) {
	e.t.Helper()
	var cr struct{ UpdateID string }
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/update", auth, map[string]any{}), &cr)
	var sr startUpdateResponse
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/update/"+cr.UpdateID, auth, map[string]any{}), &sr)
	return cr.UpdateID, "update-token " + sr.Token
}

// cdkxDocument is a valid cdkx checkpoint with one resource, to commit as a whole text.
const cdkxDocument = `{"version":3,"deployment":{"cdkx":{"n":1,"format":1},"resources":[` + "\n" + `{"urn":"a","type":"t","cdkx":{"logicalId":"a"}}` + "\n]}}"

// commitBody is a cdkx commit of text onto base, with one event of deployment.
func commitBody(seq, base int64, text, deployment string) map[string]any {
	return map[string]any{"sequenceNumber": seq, "baseVersion": base, "checkpointHash": hashOf(text), "deploymentText": text,
		"deploymentId": deployment, "events": []state.Event{{Status: "UPDATE_IN_PROGRESS", Stack: "ignored", Reason: "from " + deployment}}}
}

// TestTenancy is the table of the tenancy rules: for each request, who sends it, the status, and — for
// every refused request — that nothing changed. Organizations: a token reaches only its own (403
// elsewhere). Read-only tokens: reads only. Deployment records: written only by the update that owns
// them (the first commit binds a RUNNING deployment of the update's stack to it), and ended only by the
// token that claimed them.
func TestTenancy(t *testing.T) {
	e := newTenancy(t)
	e.must(200, "POST", "/api/stacks/org/proj", e.teamA, map[string]any{"stackName": "dev"})
	e.must(200, "POST", "/api/stacks/org/proj", e.teamA, map[string]any{"stackName": "prod"})
	e.must(200, "POST", "/api/stacks/borg/proj", e.teamB, map[string]any{"stackName": "dev"})
	doc := cdkxDocument
	e.must(200, "POST", deps, e.teamA, deploymentsBody{Deployments: []state.Deployment{
		dep("dep-dev", "dev", state.StatusPending), dep("dep-prod", "prod", state.StatusPending), dep("dep-dev-2", "dev", state.StatusPending)}})
	e.must(200, "POST", "/api/cdkx/borg/proj/deployments", e.teamB, deploymentsBody{Deployments: []state.Deployment{dep("dep-b", "dev", state.StatusPending)}})
	e.must(200, "POST", deps+"/claim", e.teamA, map[string]any{"ids": []string{"dep-dev", "dep-prod"}, "runner": "ci"})
	devID, devLease := e.begin("dev", e.teamA)
	prodID, prodLease := e.begin("prod", e.teamA)
	// The run's first commit binds dep-dev to its update.
	e.must(200, "PATCH", "/api/stacks/org/proj/dev/update/"+devID+"/commit", devLease, commitBody(1, 0, doc, "dep-dev"))

	st := "/api/stacks/org/proj/dev"
	devCommit := st + "/update/" + devID + "/commit"
	prodCommit := "/api/stacks/org/proj/prod/update/" + prodID + "/commit"
	finish := map[string]any{"status": "COMPLETED", "version": 1}
	abortTransition := map[string]any{"from": []string{"RUNNING"}, "to": "ABORTED"}
	// notForbidden: any status but 401 and 403 (a read the token may make, whatever the route answers).
	const notForbidden = 0
	tests := []struct {
		name, auth, method, path string
		body                     any
		want                     int
	}{
		// Organizations.
		{"org B token gets org A's stack", e.teamB, "GET", st, nil, 403},
		{"org B token exports org A's stack", e.teamB, "GET", st + "/export", nil, 403},
		{"org B token exports a version", e.teamB, "GET", st + "/export/1", nil, 403},
		{"org B token creates a stack in org A", e.teamB, "POST", "/api/stacks/org/proj", map[string]any{"stackName": "x"}, 403},
		{"org B token creates an update in org A", e.teamB, "POST", st + "/update", map[string]any{}, 403},
		{"org B token imports into org A", e.teamB, "POST", st + "/import", map[string]any{"version": 3, "deployment": map[string]any{}}, 403},
		{"org B token deletes org A's stack", e.teamB, "DELETE", st + "?force=true", nil, 403},
		{"org B token cancels org A's update", e.teamB, "POST", st + "/update/" + devID + "/cancel", nil, 403},
		{"org B token lists org A's locks", e.teamB, "GET", "/api/cdkx/org/proj/locks", nil, 403},
		{"org B token lists org A's deployments", e.teamB, "GET", deps, nil, 403},
		{"org B token creates a deployment in org A", e.teamB, "POST", deps, deploymentsBody{Deployments: []state.Deployment{dep("x", "dev", state.StatusPending)}}, 403},
		{"org B token claims org A's deployment", e.teamB, "POST", deps + "/claim", map[string]any{"ids": []string{"dep-dev-2"}}, 403},
		{"org B token heartbeats org A's deployment", e.teamB, "POST", deps + "/heartbeat", map[string]any{"ids": []string{"dep-dev"}}, 403},
		{"org B token finishes org A's deployment", e.teamB, "PATCH", deps + "/dep-dev", finish, 403},
		{"org B token aborts org A's deployment", e.teamB, "POST", deps + "/dep-dev/abort", map[string]any{}, 403},
		{"org B token names org A in its own path", e.teamB, "PATCH", "/api/cdkx/borg/proj/deployments/dep-dev", finish, 404},
		{"org B token lists org A's stacks", e.teamB, "GET", "/api/user/stacks?organization=org", nil, 403},
		{"org B token reads org A's history", e.teamB, "GET", st + "/updates", nil, 403},
		{"org B token tags org A's stack", e.teamB, "PATCH", st + "/tags", map[string]string{"k": "v"}, 403},
		{"org B token renames org A's stack", e.teamB, "POST", st + "/rename", map[string]string{"newName": "x"}, 403},
		{"org B token decrypts org A's secrets", e.teamB, "POST", st + "/decrypt", map[string]any{"ciphertext": "eA=="}, 403},
		{"org A token gets org B's stack", e.teamA, "GET", "/api/stacks/borg/proj/dev", nil, 403},
		{"org A token of the default organization only", e.teamA, "GET", "/api/stacks/organization/proj/dev", nil, 403},
		// Read-only tokens.
		{"read-only gets a stack", e.viewer, "GET", st, nil, 200},
		{"read-only exports", e.viewer, "GET", st + "/export", nil, 200},
		{"read-only exports a version", e.viewer, "GET", st + "/export/1", nil, 200},
		{"read-only lists stacks", e.viewer, "GET", "/api/user/stacks", nil, 200},
		{"read-only lists locks", e.viewer, "GET", "/api/cdkx/org/proj/locks", nil, 200},
		{"read-only lists deployments", e.viewer, "GET", deps, nil, 200},
		{"read-only shows a deployment", e.viewer, "GET", deps + "/dep-dev", nil, 200},
		{"read-only shows events", e.viewer, "GET", deps + "/dep-dev/events", nil, 200},
		{"read-only decrypts", e.viewer, "POST", st + "/decrypt", map[string]any{"ciphertext": "eA=="}, notForbidden},
		{"read-only decrypts a batch", e.viewer, "POST", st + "/batch-decrypt", map[string]any{"ciphertexts": []string{"eA=="}}, notForbidden},
		{"read-only reads history", e.viewer, "GET", st + "/updates", nil, 200},
		{"read-only reads the latest update", e.viewer, "GET", st + "/updates/latest", nil, notForbidden},
		{"read-only tags", e.viewer, "PATCH", st + "/tags", map[string]string{"k": "v"}, 403},
		{"read-only renames", e.viewer, "POST", st + "/rename", map[string]string{"newName": "x"}, 403},
		{"read-only encrypts a batch", e.viewer, "POST", st + "/batch-encrypt", map[string]any{"plaintexts": []string{"eA=="}}, 403},
		{"read-only creates a stack", e.viewer, "POST", "/api/stacks/org/proj", map[string]any{"stackName": "ro"}, 403},
		{"read-only creates an update", e.viewer, "POST", st + "/update", map[string]any{}, 403},
		{"read-only creates a preview", e.viewer, "POST", st + "/preview", map[string]any{}, 403},
		{"read-only imports", e.viewer, "POST", st + "/import", map[string]any{"version": 3, "deployment": map[string]any{}}, 403},
		{"read-only deletes", e.viewer, "DELETE", st + "?force=true", nil, 403},
		{"read-only encrypts", e.viewer, "POST", st + "/encrypt", map[string]any{"plaintext": "eA=="}, 403},
		{"read-only cancels", e.viewer, "POST", st + "/update/" + devID + "/cancel", nil, 403},
		{"read-only creates a deployment", e.viewer, "POST", deps, deploymentsBody{Deployments: []state.Deployment{dep("x", "dev", state.StatusPending)}}, 403},
		{"read-only claims", e.viewer, "POST", deps + "/claim", map[string]any{"ids": []string{"dep-dev-2"}}, 403},
		{"read-only claims the next", e.viewer, "POST", deps + "/claim-next", map[string]any{}, 403},
		{"read-only heartbeats", e.viewer, "POST", deps + "/heartbeat", map[string]any{"ids": []string{"dep-dev-2"}}, 403},
		{"read-only approves", e.viewer, "POST", deps + "/dep-dev-2/transition", map[string]any{"from": []string{"PENDING"}, "to": "APPROVED"}, 403},
		{"read-only aborts", e.viewer, "POST", deps + "/dep-dev/abort", map[string]any{}, 403},
		{"read-only finishes", e.viewer, "PATCH", deps + "/dep-dev", finish, 403},
		// Deployment records: commits.
		{"commit with another stack's deployment", prodLease, "PATCH", prodCommit, commitBody(1, 0, doc, "dep-dev"), 403},
		{"commit with another stack's unbound deployment", devLease, "PATCH", devCommit, commitBody(2, 1, doc, "dep-prod"), 403},
		{"commit with another organization's deployment", devLease, "PATCH", devCommit, commitBody(2, 1, doc, "dep-b"), 403},
		{"commit with a deployment not claimed", devLease, "PATCH", devCommit, commitBody(2, 1, doc, "dep-dev-2"), 403},
		// Deployment records: the queue.
		{"another token finishes a RUNNING deployment", e.carol, "PATCH", deps + "/dep-dev", finish, 403},
		{"another token ends it by a transition", e.carol, "POST", deps + "/dep-dev/transition", abortTransition, 403},
		{"another token completes it by a transition", e.carol, "POST", deps + "/dep-dev/transition", map[string]any{"from": []string{"RUNNING"}, "to": "COMPLETED"}, 403},
		{"another token's heartbeat does not keep it alive", e.carol, "POST", deps + "/heartbeat", map[string]any{"ids": []string{"dep-dev"}}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dumpTables(t, e.env)
			code, body := e.do(tt.method, tt.path, tt.auth, tt.body)
			switch {
			case tt.want == notForbidden && (code == 401 || code == 403):
				t.Errorf("%s %s = %d %s, want neither 401 nor 403", tt.method, tt.path, code, body)
			case tt.want != notForbidden && code != tt.want:
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if code == 403 {
				var er errorResponse
				decode(t, body, &er)
				if !strings.HasPrefix(er.Message, "Forbidden: ") || len(er.Message) < 60 {
					t.Errorf("403 message %q, want one that says why and what to do", er.Message)
				}
			}
			if tt.method != "GET" || code >= 400 {
				if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
					t.Errorf("%s %s changed the database (-before +after):\n%s", tt.method, tt.path, diff)
				}
			}
		})
	}

	// Messages name the token, the organization and what to do.
	_, body := e.do("GET", st, e.teamB, nil)
	var er errorResponse
	decode(t, body, &er)
	for _, want := range []string{`"team-b"`, `"org"`, "cdkx server token create"} {
		if !strings.Contains(er.Message, want) {
			t.Errorf("cross-organization 403 %q does not say %s", er.Message, want)
		}
	}
	_, body = e.do("DELETE", st, e.viewer, nil)
	decode(t, body, &er)
	if !strings.Contains(er.Message, `"viewer"`) || !strings.Contains(er.Message, "read-only") {
		t.Errorf("read-only 403 %q does not name the token and why", er.Message)
	}

	// The owner goes on: its later commits, an abort request by someone else, its own finish.
	e.must(200, "PATCH", devCommit, devLease, commitBody(2, 1, doc, "dep-dev"))
	e.must(200, "POST", deps+"/dep-dev/abort", e.carol, map[string]any{})
	e.must(200, "PATCH", deps+"/dep-dev", e.teamA, finish)
	// A finished deployment keeps its owner: another update of the stack may not write it.
	e.must(200, "POST", st+"/update/"+devID+"/complete", devLease, map[string]any{"status": "succeeded"})
	dev2ID, dev2Lease := e.begin("dev", e.teamA)
	dev2Commit := st + "/update/" + dev2ID + "/commit"
	before := dumpTables(t, e.env)
	if code, body := e.do("PATCH", dev2Commit, dev2Lease, commitBody(1, 2, doc, "dep-dev")); code != 403 {
		t.Errorf("commit of another update's deployment = %d %s, want 403", code, body)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("a refused commit changed the database (-before +after):\n%s", diff)
	}
	// Events under an ID the queue does not know belong to the stack that wrote them first.
	e.must(200, "PATCH", dev2Commit, dev2Lease, commitBody(1, 2, doc, "free-1"))
	before = dumpTables(t, e.env)
	if code, body := e.do("PATCH", prodCommit, prodLease, commitBody(1, 0, doc, "free-1")); code != 403 {
		t.Errorf("commit of another stack's free events = %d %s, want 403", code, body)
	}
	if code, body := e.do("POST", deps, e.teamA, deploymentsBody{Deployments: []state.Deployment{dep("free-1", "prod", state.StatusPending)}}); code != 409 {
		t.Errorf("create a deployment whose ID has events = %d %s, want 409", code, body)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("refused requests changed the database (-before +after):\n%s", diff)
	}
	var evs struct{ Events []state.Event }
	decode(t, e.must(200, "GET", deps+"/dep-dev/events", e.viewer, nil), &evs)
	if len(evs.Events) != 2 {
		t.Errorf("events of dep-dev = %+v, want the owner's 2", evs.Events)
	}
	// The claimer is recorded.
	var claimer string
	if err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT claimed_by FROM svc_deployments WHERE id = 'dep-prod'`).Scan(&claimer); err != nil || claimer != "team-a" {
		t.Errorf("claimed_by of dep-prod = %q, %v; want team-a", claimer, err)
	}
}

// TestTokenScopes checks what each token sees of the organizations: GET /api/user, the default
// organization and the stack list.
func TestTokenScopes(t *testing.T) {
	e := newTenancy(t)
	both := e.mustCreateToken("both", ForOrgs("org", DefaultOrganization))
	everyOrg := e.mustCreateToken("every", ForOrgs(AllOrganizations))
	e.must(200, "POST", "/api/stacks/org/proj", e.teamA, map[string]any{"stackName": "dev"})
	e.must(200, "POST", "/api/stacks/borg/proj", e.teamB, map[string]any{"stackName": "dev"})
	e.must(200, "POST", "/api/stacks/"+DefaultOrganization+"/proj", both, map[string]any{"stackName": "dev"})
	tests := []struct {
		name, auth string
		orgs       []string
		defaultOrg string
		stacks     []string
	}{
		{"all (created without scope)", e.token, []string{DefaultOrganization, "borg", "org"}, DefaultOrganization,
			[]string{"borg/proj/dev", "org/proj/dev", DefaultOrganization + "/proj/dev"}},
		{"all (--org '*')", everyOrg, []string{DefaultOrganization, "borg", "org"}, DefaultOrganization,
			[]string{"borg/proj/dev", "org/proj/dev", DefaultOrganization + "/proj/dev"}},
		{"org", e.teamA, []string{"org"}, "org", []string{"org/proj/dev"}},
		{"borg", e.teamB, []string{"borg"}, "borg", []string{"borg/proj/dev"}},
		{"org and the default", both, []string{DefaultOrganization, "org"}, DefaultOrganization,
			[]string{"org/proj/dev", DefaultOrganization + "/proj/dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u userInfo
			decode(t, e.must(200, "GET", "/api/user", tt.auth, nil), &u)
			var orgs []string
			for _, o := range u.Organizations {
				orgs = append(orgs, o.Name)
			}
			if diff := cmp.Diff(tt.orgs, orgs); diff != "" {
				t.Errorf("GET /api/user organizations (-want +got):\n%s", diff)
			}
			var d struct{ GitHubLogin string }
			decode(t, e.must(200, "GET", "/api/user/organizations/default", tt.auth, nil), &d)
			if d.GitHubLogin != tt.defaultOrg {
				t.Errorf("default organization = %q, want %q", d.GitHubLogin, tt.defaultOrg)
			}
			var ls struct{ Stacks []stackSummary }
			decode(t, e.must(200, "GET", "/api/user/stacks", tt.auth, nil), &ls)
			var stacks []string
			for _, s := range ls.Stacks {
				stacks = append(stacks, s.OrgName+"/"+s.ProjectName+"/"+s.StackName)
			}
			if diff := cmp.Diff(tt.stacks, stacks); diff != "" {
				t.Errorf("GET /api/user/stacks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateTokenOptions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []TokenOption
	}{
		{".", nil},
		{"..", nil},
		{"a b", nil},
		{"bad-org", []TokenOption{ForOrgs("..")}},
		{"no-org", []TokenOption{ForOrgs()}},
	} {
		if _, err := e.srv.CreateToken(ctx, tt.name, tt.opts...); err == nil {
			t.Errorf("CreateToken(%q) = nil error, want one", tt.name)
		}
	}
	if _, err := e.srv.CreateToken(ctx, "ro", ForOrgs("zeta", "org", "org"), ReadOnly()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.CreateToken(ctx, "star", ForOrgs("org", AllOrganizations)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.CreateToken(ctx, "ro", ForOrgs("org")); err != ErrTokenExists {
		t.Errorf("CreateToken(existing name) = %v, want ErrTokenExists", err)
	}
	got, err := e.srv.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, tok := range got {
		lines = append(lines, fmt.Sprintf("%s %v %v", tok.Name, tok.Orgs, tok.ReadOnly))
	}
	want := []string{"alice [*] false", "ro [org zeta] true", "star [*] false"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("Tokens() (-want +got):\n%s", diff)
	}
}

// TestMigrateTenancy stores a token as the service kept them before scopes and migrates: the token
// reaches every organization and may write, so that an upgrade breaks no CI job.
func TestMigrateTenancy(t *testing.T) {
	ctx := context.Background()
	url, pool, p := migrationProvider(t)
	if _, err := p.UpTo(ctx, 5); err != nil {
		t.Fatalf("migrate to 5: %v", err)
	}
	e := newEnv(t) // for its token's hash
	const tok = "cdkx-old"
	if _, err := pool.Exec(ctx, `INSERT INTO svc_tokens (name, hash, created_at) VALUES ('old', sha256($1::bytea), now())`, []byte(tok)); err != nil {
		t.Fatal(err)
	}
	srv, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer srv.Close()
	e.srv = srv
	e.ts = httptest.NewServer(srv.Handler())
	defer e.ts.Close()
	for _, org := range []string{DefaultOrganization, "zeta"} {
		e.must(200, "POST", "/api/stacks/"+org+"/proj", "token "+tok, map[string]any{"stackName": "dev"})
	}
	if _, err := p.DownTo(ctx, 5); err != nil {
		t.Fatalf("migrate down to 5: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}

// TestAnotherTokensLease checks the lease side of tenancy: another token of the organization that takes
// the stack's lock between a run's claim and its lock cannot bind the run's deployment, and a revoked
// token's update cannot renew its lease.
func TestAnotherTokensLease(t *testing.T) {
	e := newTenancy(t)
	e.must(200, "POST", "/api/stacks/org/proj", e.teamA, map[string]any{"stackName": "qa"})
	e.must(200, "POST", deps, e.teamA, deploymentsBody{Deployments: []state.Deployment{dep("dep-qa", "qa", state.StatusPending)}})
	e.must(200, "POST", deps+"/claim", e.teamA, map[string]any{"ids": []string{"dep-qa"}, "runner": "ci"})
	id, lease := e.begin("qa", e.carol)
	before := dumpTables(t, e.env)
	code, body := e.do("PATCH", "/api/stacks/org/proj/qa/update/"+id+"/commit", lease, commitBody(1, 0, cdkxDocument, "dep-qa"))
	if code != 403 || !strings.Contains(string(body), `claimed by token \"team-a\"`) {
		t.Errorf("commit of a deployment another token claimed = %d %s, want 403 naming the claimer", code, body)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("a refused commit changed the database (-before +after):\n%s", diff)
	}
	renew := "/api/stacks/org/proj/qa/update/" + id + "/renew_lease"
	e.must(200, "POST", renew, lease, map[string]any{"duration": 60})
	if err := e.srv.RevokeToken(context.Background(), "carol"); err != nil {
		t.Fatal(err)
	}
	before = dumpTables(t, e.env)
	code, body = e.do("POST", renew, lease, map[string]any{"duration": 60})
	if code != 403 || !strings.Contains(string(body), "revoked") {
		t.Errorf("renew_lease of a revoked token's update = %d %s, want 403 saying it was revoked", code, body)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("a refused renewal changed the database (-before +after):\n%s", diff)
	}
}
