package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// stackRef is a stack's row identity and counters.
type stackRef struct {
	id            int64
	version       int64
	resourceCount int64
}

// lookupStack reads the stack named by the request's path, locking its row when lock is set; 404 when
// it does not exist.
func lookupStack(ctx context.Context, tx pgx.Tx, r *http.Request, lock bool) (stackRef, error) {
	q := `SELECT id, version, resource_count FROM svc_stacks WHERE org = $1 AND project = $2 AND name = $3`
	if lock {
		q += ` FOR UPDATE`
	}
	var st stackRef
	err := tx.QueryRow(ctx, q, r.PathValue("org"), r.PathValue("project"), r.PathValue("stack")).Scan(&st.id, &st.version, &st.resourceCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	return st, err
}

// capability mirrors apitype.APICapabilityConfig.
type capability struct {
	Capability    string          `json:"capability"`
	Version       int             `json:"version,omitempty"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
}

func (s *Server) capabilities(r *http.Request, c *call) (any, error) {
	return map[string][]capability{"capabilities": {{
		Capability:    "delta-checkpoint-uploads-v2",
		Version:       2,
		Configuration: json.RawMessage(`{"checkpointCutoffSizeBytes":1048576}`),
	}}}, nil
}

// createStackRequest mirrors apitype.CreateStackRequest.
type createStackRequest struct {
	StackName string            `json:"stackName"`
	Tags      map[string]string `json:"tags,omitempty"`
}

func (s *Server) createStack(r *http.Request, c *call) (any, error) {
	var req createStackRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	org, project := r.PathValue("org"), r.PathValue("project")
	for _, n := range []string{org, project, req.StackName} {
		if !validName.MatchString(n) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: invalid name %q: use 1 to 100 letters, digits, '-', '_' or '.'", n)
		}
	}
	if req.Tags == nil {
		req.Tags = map[string]string{}
	}
	tags, err := json.Marshal(req.Tags)
	if err != nil {
		return nil, err
	}
	_, err = s.pool.Exec(r.Context(), `INSERT INTO svc_stacks (org, project, name, tags, created_at) VALUES ($1, $2, $3, $4, $5)`,
		org, project, req.StackName, tags, s.now())
	if pgCode(err) == codeUniqueViolation {
		return nil, errorf(http.StatusConflict, "Conflict: stack '%s/%s/%s' already exists", org, project, req.StackName)
	}
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// operationStatus mirrors apitype.OperationStatus.
type operationStatus struct {
	Kind    string `json:"kind"`
	Author  string `json:"author"`
	Started int64  `json:"started"`
}

// stackInfo mirrors apitype.Stack (GET /api/stacks/{org}/{project}/{stack}).
type stackInfo struct {
	ID               string            `json:"id"`
	OrgName          string            `json:"orgName"`
	ProjectName      string            `json:"projectName"`
	StackName        string            `json:"stackName"`
	CurrentOperation *operationStatus  `json:"currentOperation,omitempty"`
	ActiveUpdate     string            `json:"activeUpdate"`
	Tags             map[string]string `json:"tags,omitempty"`
	Version          int64             `json:"version"`
}

func (s *Server) getStack(r *http.Request, c *call) (any, error) {
	var info stackInfo
	var id int64
	var active, kind *string
	var started *time.Time
	err := s.pool.QueryRow(r.Context(), `SELECT s.id, s.org, s.project, s.name, s.tags, s.version, u.id, u.kind, u.created_at
FROM svc_stacks s LEFT JOIN svc_updates u ON u.stack_id = s.id AND u.status IN ('not started', 'requested', 'running')
WHERE s.org = $1 AND s.project = $2 AND s.name = $3`, r.PathValue("org"), r.PathValue("project"), r.PathValue("stack")).
		Scan(&id, &info.OrgName, &info.ProjectName, &info.StackName, &info.Tags, &info.Version, &active, &kind, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	if err != nil {
		return nil, err
	}
	info.ID = info.OrgName + "/" + info.ProjectName + "/" + info.StackName
	if active != nil {
		info.ActiveUpdate = *active
		info.CurrentOperation = &operationStatus{Kind: *kind, Author: c.user, Started: started.Unix()}
	}
	return info, nil
}

// deleteStack follows the service: 400 "Bad Request: Stack still contains resources." (the exact message
// the Pulumi CLI tests) unless ?force=true, 409 while an update is active.
func (s *Server) deleteStack(r *http.Request, c *call) (any, error) {
	force := r.URL.Query().Get("force") == "true"
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, true)
		if err != nil {
			return err
		}
		var active bool
		if err := tx.QueryRow(r.Context(), `SELECT EXISTS (SELECT 1 FROM svc_updates WHERE stack_id = $1 AND status IN ('not started', 'requested', 'running'))`, st.id).Scan(&active); err != nil {
			return err
		}
		if active {
			return errorf(http.StatusConflict, "Conflict: Another update is currently in progress.")
		}
		if st.resourceCount > 0 && !force {
			return errorf(http.StatusBadRequest, "Bad Request: Stack still contains resources.")
		}
		_, err = tx.Exec(r.Context(), `DELETE FROM svc_stacks WHERE id = $1`, st.id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

func (s *Server) noSecrets(r *http.Request, c *call) (any, error) {
	return nil, errorf(http.StatusNotImplemented,
		"Not Implemented: cdkx server does not encrypt secrets; use another secrets provider (pulumi stack init --secrets-provider passphrase)")
}
