package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
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
func lookupStack(ctx context.Context, tx *storage.Tx, r *http.Request, lock bool) (stackRef, error) {
	st, err := tx.LookupStack(ctx, stackPath(r), lock)
	if errors.Is(err, storage.ErrNotFound) {
		return stackRef{}, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	return stackRef{id: st.ID, version: st.Version, resourceCount: st.ResourceCount}, err
}

// stackPath is the stack the request's path names.
func stackPath(r *http.Request) storage.StackPath {
	return storage.StackPath{Org: r.PathValue("org"), Project: r.PathValue("project"), Stack: r.PathValue("stack")}
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
	err = s.db.CreateStack(r.Context(), storage.StackPath{Org: org, Project: project, Stack: req.StackName}, tags, s.now())
	if errors.Is(err, storage.ErrExists) {
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
	st, err := s.db.StackInfoOf(r.Context(), stackPath(r))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	if err != nil {
		return nil, err
	}
	info := stateapi.Stack{OrgName: st.Org, ProjectName: st.Project, StackName: st.Stack, Tags: st.Tags, Version: st.Version}
	info.ID = info.OrgName + "/" + info.ProjectName + "/" + info.StackName
	if st.Update != "" {
		info.ActiveUpdate = st.Update
		if isActive(st.Status) {
			info.CurrentOperation = &stateapi.OperationStatus{Kind: st.Kind, Author: cmp.Or(st.Author, "unknown"), Started: st.Created.Unix()}
		}
	}
	return info, nil
}

// deleteStack follows the service: 400 "Bad Request: Stack still contains resources." (the exact message
// the Pulumi CLI tests) unless ?force=true, 409 while an update is active.
func (s *Server) deleteStack(r *http.Request, c *call) (any, error) {
	force := r.URL.Query().Get("force") == "true"
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
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
		return tx.DeleteStack(r.Context(), st.id)
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// projectExists serves HEAD /api/stacks/{org}/{project} (`pulumi new` asks it): 200 when the project has
// a stack, else 404.
func (s *Server) projectExists(r *http.Request, c *call) (any, error) {
	exists, err := s.db.ProjectExists(r.Context(), r.PathValue("org"), r.PathValue("project"))
	if err != nil {
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
	err = s.db.SetTags(r.Context(), stackPath(r), data)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	if err != nil {
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
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, true)
		if err != nil {
			return err
		}
		if err := requireIdle(r.Context(), tx, st.id); err != nil {
			return err
		}
		err = tx.RenameStack(r.Context(), st.id, newProject, req.NewName)
		if errors.Is(err, storage.ErrExists) {
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
		err = tx.InsertStartedUpdate(r.Context(), storage.NewUpdate{ID: id, StackID: st.id, Kind: "rename", Status: statusRunning, CreatedAt: now, CreatedBy: c.user})
		if storage.UniqueViolation(err) {
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
		return tx.CompleteUpdate(r.Context(), id, statusSucceeded, now)
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
func requireIdle(ctx context.Context, tx *storage.Tx, stackID int64) error {
	active, err := tx.Busy(ctx, stackID)
	if err != nil {
		return err
	}
	if active {
		return errUpdateInProgress
	}
	return nil
}
