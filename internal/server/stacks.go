package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
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

// capabilities answers GET /api/capabilities: stateapi.CapabilitiesResponse.
func (s *Server) capabilities(r *http.Request, c *call) (any, error) {
	return stateapi.CapabilitiesResponse{Capabilities: []stateapi.APICapabilityConfig{{
		Capability:    "delta-checkpoint-uploads-v2",
		Version:       2,
		Configuration: json.RawMessage(`{"checkpointCutoffSizeBytes":1048576}`),
	}}}, nil
}

// createStack answers POST /api/stacks/{org}/{project} (stateapi.CreateStackRequest →
// stateapi.CreateStackResponse).
func (s *Server) createStack(r *http.Request, c *call) (any, error) {
	var req stateapi.CreateStackRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	org, project := r.PathValue("org"), r.PathValue("project") // checked by api (checkNames)
	if !validStackName(req.StackName) {
		return nil, badName("stack", req.StackName, stackRule, "in stackName")
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
	return stateapi.CreateStackResponse{}, nil
}

// Names of stateapi types the package's tests decode into and compare with.
type (
	operationStatus = stateapi.OperationStatus
	stackInfo       = stateapi.Stack
)

// getStack serves GET …/{stack} (stateapi.Stack). activeUpdate is the stack's active update, or its
// latest update when none is active (as the Pulumi service answers: `pulumi cancel` then reports that
// the update already completed), or "" for a stack never updated; currentOperation describes the active
// one, with the name of the token that created it as author.
func (s *Server) getStack(r *http.Request, c *call) (any, error) {
	var info stateapi.Stack
	var id int64
	var update, kind, status, author *string
	var started *time.Time
	err := s.pool.QueryRow(r.Context(), `SELECT s.id, s.org, s.project, s.name, s.tags, s.version, u.id, u.kind, u.status, u.created_by, u.created_at
FROM svc_stacks s LEFT JOIN LATERAL (SELECT * FROM svc_updates WHERE stack_id = s.id
  ORDER BY status IN ('not started', 'requested', 'running') DESC, created_at DESC LIMIT 1) u ON true
WHERE s.org = $1 AND s.project = $2 AND s.name = $3`, r.PathValue("org"), r.PathValue("project"), r.PathValue("stack")).
		Scan(&id, &info.OrgName, &info.ProjectName, &info.StackName, &info.Tags, &info.Version, &update, &kind, &status, &author, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	if err != nil {
		return nil, err
	}
	info.ID = info.OrgName + "/" + info.ProjectName + "/" + info.StackName
	if update != nil {
		info.ActiveUpdate = *update
		if isActive(*status) {
			info.CurrentOperation = &stateapi.OperationStatus{Kind: *kind, Author: cmp.Or(deref(author), "unknown"), Started: started.Unix()}
		}
	}
	return info, nil
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
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
		if err := requireIdle(r.Context(), tx, st.id); err != nil {
			return err
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

// projectExists serves HEAD /api/stacks/{org}/{project} (`pulumi new` asks it): 200 when the project has
// a stack, else 404.
func (s *Server) projectExists(r *http.Request, c *call) (any, error) {
	var exists bool
	if err := s.pool.QueryRow(r.Context(), `SELECT EXISTS (SELECT 1 FROM svc_stacks WHERE org = $1 AND project = $2)`,
		r.PathValue("org"), r.PathValue("project")).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, errorf(http.StatusNotFound, "Not Found: project '%s/%s' has no stack", r.PathValue("org"), r.PathValue("project"))
	}
	return nil, nil
}

// updateTags serves PATCH …/tags (`pulumi stack tag set/rm`): the body, a JSON object of strings,
// replaces the stack's tags; 204.
func (s *Server) updateTags(r *http.Request, c *call) (any, error) {
	var tags map[string]string
	if _, err := s.decodeBody(r, &tags, false); err != nil {
		return nil, err
	}
	if tags == nil {
		tags = map[string]string{}
	}
	data, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	tag, err := s.pool.Exec(r.Context(), `UPDATE svc_stacks SET tags = $4 WHERE org = $1 AND project = $2 AND name = $3`,
		r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"), data)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	return noContent{}, nil
}

// renameStack serves POST …/rename (stateapi.StackRenameRequest; an empty newProject keeps the project):
// the stack keeps its row, so its history, checkpoints, deployment records and secrets follow it. When
// it has state, the URNs in it are rewritten to the new names (urn:pulumi:STACK::PROJECT::…) and stored as
// a new checkpoint by an update of kind rename, as the Pulumi service does; 400 for an invalid name, 409
// when the target exists or while an update is active, 404 when the stack does not exist.
func (s *Server) renameStack(r *http.Request, c *call) (any, error) {
	var req stateapi.StackRenameRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	org, oldProject, oldName := r.PathValue("org"), r.PathValue("project"), r.PathValue("stack")
	newProject := cmp.Or(req.NewProject, oldProject)
	if !validProjectName(newProject) {
		return nil, badName("project", newProject, projectRule, "in newProject")
	}
	if !validStackName(req.NewName) {
		return nil, badName("stack", req.NewName, stackRule, "in newName")
	}
	if newProject == oldProject && req.NewName == oldName {
		return nil, nil
	}
	now := s.now()
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, true)
		if err != nil {
			return err
		}
		if err := requireIdle(r.Context(), tx, st.id); err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `UPDATE svc_stacks SET project = $2, name = $3 WHERE id = $1`, st.id, newProject, req.NewName)
		if pgCode(err) == codeUniqueViolation {
			return errorf(http.StatusConflict, "Conflict: stack '%s/%s/%s' already exists", org, newProject, req.NewName)
		}
		if err != nil {
			return err
		}
		if st.version == 0 {
			return nil
		}
		// The rename's own update: inserted running, so that the unique index refuses it while another
		// update is active, and numbered in history by the trigger.
		id := uuid.NewString()
		_, err = tx.Exec(r.Context(), `INSERT INTO svc_updates (id, stack_id, kind, status, created_at, started_at, created_by) VALUES ($1, $2, 'rename', $3, $4, $4, $5)`,
			id, st.id, statusRunning, now, c.user)
		if pgCode(err) == codeUniqueViolation {
			return errUpdateInProgress
		}
		if err != nil {
			return err
		}
		prev, err := s.checkpointText(r.Context(), tx, st.id, st.version)
		if err != nil {
			return err
		}
		text := renameInState(prev, oldProject, oldName, newProject, req.NewName)
		count, err := validateDeployment(text, pulumiDoc)
		if err != nil {
			return err
		}
		if _, err := s.storeCheckpoint(r.Context(), tx, updateRow{id: id, stackID: st.id}, text, nil, nil, count); err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `UPDATE svc_updates SET status = $2, completed_at = $3 WHERE id = $1`, id, statusSucceeded, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return nil, nil
}

// renameInState rewrites a checkpoint's text for a renamed stack: every URN prefix
// urn:pulumi:OLDSTACK::OLDPROJECT:: (resources, parents, dependencies, providers, property values)
// becomes urn:pulumi:NEWSTACK::NEWPROJECT::, the root stack resource's name OLDPROJECT-OLDSTACK becomes
// NEWPROJECT-NEWSTACK, and the service secrets provider's "project" and "stack"
// follow, so that the Pulumi CLI encrypts under the new path.
func renameInState(text []byte, oldProject, oldStack, newProject, newStack string) []byte {
	oldPrefix := []byte("urn:pulumi:" + oldStack + "::" + oldProject + "::")
	newPrefix := []byte("urn:pulumi:" + newStack + "::" + newProject + "::")
	text = bytes.ReplaceAll(text, oldPrefix, newPrefix)
	// The root stack resource is named PROJECT-STACK (as Pulumi's own rename renames it).
	root := string(newPrefix) + "pulumi:pulumi:Stack::"
	text = bytes.ReplaceAll(text, []byte(root+oldProject+"-"+oldStack+`"`), []byte(root+newProject+"-"+newStack+`"`))
	var doc struct {
		Version    json.RawMessage            `json:"version"`
		Deployment map[string]json.RawMessage `json:"deployment"`
	}
	if json.Unmarshal(text, &doc) != nil || doc.Deployment == nil {
		return text
	}
	var sp struct {
		Type  string         `json:"type"`
		State map[string]any `json:"state"`
	}
	raw, ok := doc.Deployment["secrets_providers"]
	if !ok || json.Unmarshal(raw, &sp) != nil || sp.Type != "service" || sp.State == nil {
		return text
	}
	sp.State["project"], sp.State["stack"] = newProject, newStack
	next, err := json.Marshal(sp)
	if err != nil {
		return text
	}
	doc.Deployment["secrets_providers"] = next
	out, err := json.Marshal(doc)
	if err != nil {
		return text
	}
	return out
}

// requireIdle answers errUpdateInProgress (409) when the stack has an active update. The caller holds the
// stack's row lock (FOR UPDATE), so no update can be created before its transaction ends: the insert's
// foreign-key check takes a key-share lock on that row and waits.
func requireIdle(ctx context.Context, tx pgx.Tx, stackID int64) error {
	var active bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM svc_updates WHERE stack_id = $1 AND status IN ('not started', 'requested', 'running'))`, stackID).Scan(&active); err != nil {
		return err
	}
	if active {
		return errUpdateInProgress
	}
	return nil
}
