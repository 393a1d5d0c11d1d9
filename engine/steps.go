package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// phase is where a step stands in its run: the statuses its events carry (its operation's, from
// statusTable) and why it runs. The same kind of step serves several phases (a create in a deploy, in a
// replacement, in a rollback's re-create).
type phase struct {
	statusSet
	reason     string // of the *_IN_PROGRESS event
	doneReason string // of the *_COMPLETE event
}

// phaseOf returns the phase of op with no reasons.
func phaseOf(op operation) phase { return phase{statusSet: op.statuses()} }

// createStep creates a new object for a resource (a create, either half of a replacement, a rollback's
// re-create). Pending operation: creating, with the inputs sent, so that recovery can locate the object.
type createStep struct {
	sub subject
	ph  phase
	// inputs are sent to the provider; the record keeps template.Inputs (write-only values as fingerprints).
	inputs resource.Properties
	// template is the record of the new object but for its physical ID, outputs and status.
	template *state.Resource
	// keep is the record state keeps when the create fails (the old object of a replacement); nil drops
	// the record, unless template still lists objects left by replacements.
	keep *state.Resource

	result resource.CreateResult
	// located is set when the create's answer was lost and its object was found (settleUnknown).
	located bool
}

// newCreateStep returns the step that creates the object of template (the new record but for its physical
// ID, outputs and status) in stack, sending inputs; keep is what state records when the create fails (see
// createStep.keep). The template has no physical ID and no pending operation.
func newCreateStep(stack string, ph phase, template *state.Resource, inputs resource.Properties, keep *state.Resource, t turn) *createStep {
	sub := newSubject("create", stack, template.LogicalID, template.Type, template.Provider, t,
		unless(template.PhysicalID == "", "the new record already has a physical ID"),
		unless(template.Pending == nil, "the new record already has a pending operation"))
	return &createStep{sub: sub, ph: ph, inputs: inputs, template: template, keep: keep}
}

func (s *createStep) subject() subject { return s.sub }

func (s *createStep) begin(_ *state.Resource, now time.Time) (*state.Resource, Event) {
	p := *s.template
	p.PhysicalID, p.Inputs, p.Outputs, p.Status = "", nil, nil, string(s.ph.inProgress)
	p.Pending = &state.PendingOperation{Op: state.PendingCreate, Inputs: s.template.Inputs, StartedAt: now}
	return &p, Event{Status: s.ph.inProgress, Reason: s.ph.reason}
}

func (s *createStep) call(ctx context.Context, p Provider) error {
	req := resource.CreateRequest{Type: s.sub.typ, LogicalID: s.sub.logicalID, Properties: s.inputs}
	var err error
	s.result, err = p.Create(ctx, req)
	if errors.Is(err, resource.ErrOutcomeUnknown) {
		return s.settleUnknown(ctx, p, req, err)
	}
	return err
}

// settleUnknown settles a create whose answer did not come (resource.ErrOutcomeUnknown: the provider may
// have made the object) the way crash recovery settles an interrupted one, without sending it blindly
// again: the object is looked up by the request (Provider.Locate). Found → it is read and the create
// succeeds with it; absent → the create is sent once more, and an unknown outcome of that one is looked
// up once more (absent again: the create failed); in an interrupted run it is not sent again. When the object cannot be looked up (the provider
// cannot locate, or the lookup fails) the result is an *UnsettledCreateError: the pending record stays,
// so that the next deploy settles it, and the error says what to check.
func (s *createStep) settleUnknown(ctx context.Context, p Provider, req resource.CreateRequest, callErr error) error {
	for resent := false; ; resent = true {
		id, err := p.Locate(ctx, req)
		if err == nil {
			live, rerr := p.Read(ctx, resource.ReadRequest{Type: req.Type, PhysicalID: id, Properties: req.Properties})
			if rerr != nil {
				return &UnsettledCreateError{LogicalID: req.LogicalID, Provider: s.sub.provider, Create: callErr, Locate: rerr}
			}
			s.result, s.located = resource.CreateResult{PhysicalID: id, Outputs: live.Outputs}, true
			return nil
		}
		if !errors.Is(err, resource.ErrNotFound) {
			return &UnsettledCreateError{LogicalID: req.LogicalID, Provider: s.sub.provider, Create: callErr, Locate: err}
		}
		if resent {
			return fmt.Errorf("%w; the object was looked up and does not exist, so the create failed", callErr)
		}
		if interrupted(ctx) {
			// The request may still be on its way (a proxy holding it): only the next deploy, later,
			// may conclude from a lookup that it was not carried out.
			return &UnsettledCreateError{LogicalID: req.LogicalID, Provider: s.sub.provider, Create: callErr, Locate: errNotYetFound}
		}
		s.result, err = p.Create(ctx, req)
		if !errors.Is(err, resource.ErrOutcomeUnknown) {
			return err
		}
		callErr = err
	}
}

// errNotYetFound is the lookup's outcome of a create whose answer was lost in an interrupted run.
var errNotYetFound = fmt.Errorf("not found yet, and %w, so the create was not sent again", resource.ErrInterrupted)

// interrupted reports whether the run of a provider call was interrupted (resource.WithInterrupt).
func interrupted(ctx context.Context) bool {
	select {
	case <-resource.Interrupted(ctx):
		return true
	default:
		return false
	}
}

// UnsettledCreateError fails a create whose answer did not come (resource.ErrOutcomeUnknown) and whose
// object could not be looked up: the provider cannot locate objects by their inputs, or the lookup failed.
// The resource keeps its pending create, which the next deploy settles (or reports again).
type UnsettledCreateError struct {
	LogicalID, Provider string
	Create              error // the create's error (matches resource.ErrOutcomeUnknown)
	Locate              error // the lookup's error (matches resource.ErrCannotLocate when it cannot)
}

// Error says what happened and what to check by hand.
func (e *UnsettledCreateError) Error() string {
	if errors.Is(e.Locate, resource.ErrCannotLocate) {
		return fmt.Sprintf("%v; provider %s cannot look objects up by their inputs: check the provider for the object of %s and delete it (or import it with cdkx import); the create stays pending and the next deploy stops here until it is settled",
			e.Create, e.Provider, e.LogicalID)
	}
	return fmt.Sprintf("%v; looking the object up failed (%v): the create stays pending and the next deploy looks %s up again",
		e.Create, e.Locate, e.LogicalID)
}

// Unwrap returns both causes.
func (e *UnsettledCreateError) Unwrap() []error { return []error{e.Create, e.Locate} }

func (s *createStep) succeeded(*state.Resource) stepOutcome {
	rec := *s.template
	rec.PhysicalID, rec.Pending, rec.Status = s.result.PhysicalID, nil, string(s.ph.complete)
	rec.Outputs = withCRN(s.result.Outputs, s.sub.typ, s.result.PhysicalID)
	reason := s.ph.doneReason
	if s.located {
		reason = "the create's answer was lost; its object was looked up and recorded, not created again"
	}
	return stepOutcome{next: &rec, count: s.ph.complete,
		event: Event{PhysicalID: s.result.PhysicalID, Status: s.ph.complete, Reason: reason}}
}

func (s *createStep) failed(cur *state.Resource, err error) stepOutcome {
	e := Event{Status: s.ph.failed, Reason: err.Error()}
	var unsettled *UnsettledCreateError
	if errors.As(err, &unsettled) && cur != nil && cur.Pending != nil {
		// The object may exist: the pending create stays for the next deploy's recovery to settle.
		kept := *cur
		kept.Status = string(s.ph.failed)
		return stepOutcome{next: &kept, event: e}
	}
	// A create that made its object but could not finish it (a server whose start failed) names the
	// object: state keeps it among the objects to delete, so that it is never orphaned.
	var made []state.Object
	if id := s.result.PhysicalID; id != "" {
		made = []state.Object{{Type: s.sub.typ, Provider: s.sub.provider, PhysicalID: id, Inputs: s.template.Inputs,
			Outputs: withCRN(s.result.Outputs, s.sub.typ, id)}}
		e.PhysicalID = id
		e.Reason += "; the object was made and is kept in state, to be deleted by the next deploy or destroy"
	}
	switch {
	case s.keep != nil:
		kept := *s.keep
		kept.Status, kept.Pending = string(s.ph.failed), nil
		kept.Replaced = append(slices.Clone(kept.Replaced), made...)
		return stepOutcome{next: &kept, event: e}
	case len(s.template.Replaced) > 0 || len(made) > 0:
		gone := *s.template
		gone.PhysicalID, gone.Inputs, gone.Outputs, gone.Pending, gone.Status = "", nil, nil, nil, string(s.ph.failed)
		gone.Replaced = append(slices.Clone(gone.Replaced), made...)
		return stepOutcome{next: &gone, event: e}
	}
	return stepOutcome{drop: true, event: e}
}

// updateStep changes an object in place (an update, a rollback's restore). Pending operation: updating,
// with the inputs sent.
type updateStep struct {
	sub subject
	ph  phase
	// old is the record of the object as it is; the call sends its inputs as Old.
	old *state.Resource
	// inputs are sent as New; next is the record after success, but for its outputs and status.
	inputs  resource.Properties
	next    *state.Resource
	changed []string

	result resource.UpdateResult
}

// newUpdateStep returns the step that changes old's live object in place in stack, sending inputs as New;
// next is the record after success but for its outputs and status, changed the names of the changed
// properties. old has a physical ID.
func newUpdateStep(stack string, ph phase, old *state.Resource, inputs resource.Properties, next *state.Resource, changed []string, t turn) *updateStep {
	sub := newSubject("update", stack, old.LogicalID, old.Type, old.Provider, t,
		unless(old.PhysicalID != "", "no live object to update"))
	return &updateStep{sub: sub, ph: ph, old: old, inputs: inputs, next: next, changed: changed}
}

func (s *updateStep) subject() subject { return s.sub }

func (s *updateStep) begin(_ *state.Resource, now time.Time) (*state.Resource, Event) {
	p := *s.old
	p.Status = string(s.ph.inProgress)
	p.Pending = &state.PendingOperation{Op: state.PendingUpdate, Inputs: s.next.Inputs, PhysicalID: s.old.PhysicalID, StartedAt: now}
	return &p, Event{PhysicalID: s.old.PhysicalID, Status: s.ph.inProgress, Reason: s.ph.reason}
}

func (s *updateStep) call(ctx context.Context, p Provider) error {
	var err error
	s.result, err = p.Update(ctx, resource.UpdateRequest{Type: s.old.Type, PhysicalID: s.old.PhysicalID, Old: s.old.Inputs,
		New: s.inputs, OldOutputs: s.old.Outputs, Changed: s.changed})
	return err
}

func (s *updateStep) succeeded(*state.Resource) stepOutcome {
	rec := *s.next
	rec.PhysicalID, rec.Pending, rec.Status = s.old.PhysicalID, nil, string(s.ph.complete)
	rec.Outputs = withCRN(s.result.Outputs, s.old.Type, s.old.PhysicalID)
	return stepOutcome{next: &rec, count: s.ph.complete,
		event: Event{PhysicalID: s.old.PhysicalID, Status: s.ph.complete, Reason: s.ph.doneReason}}
}

func (s *updateStep) failed(_ *state.Resource, err error) stepOutcome {
	kept := *s.old
	kept.Status, kept.Pending = string(s.ph.failed), nil
	return stepOutcome{next: &kept, event: Event{PhysicalID: s.old.PhysicalID, Status: s.ph.failed, Reason: err.Error()}}
}

// deleteStep deletes a resource's live object (a destroy, a delete of what left the assembly, the first
// half of a delete-before-replace replacement, a rollback's delete of what the run created). Pending
// operation: deleting, with the object's physical ID. An object already gone is success.
type deleteStep struct {
	sub subject
	ph  phase
	// cur is the record whose live object is deleted.
	cur *state.Resource
	// then is the record after success; nil removes it (or, when cur still lists objects left by
	// replacements, keeps it without a live object).
	then *state.Resource
	// count is what the run counts on success ("": nothing, e.g. half of a replacement).
	count Status
}

// newDeleteStep returns the step that deletes cur's live object in stack; then is the record after success
// (nil: see deleteStep.then), count what the run counts on success. cur has a physical ID.
func newDeleteStep(stack string, ph phase, cur, then *state.Resource, count Status, t turn) *deleteStep {
	sub := newSubject("delete", stack, cur.LogicalID, cur.Type, cur.Provider, t,
		unless(cur.PhysicalID != "", "no live object to delete"))
	return &deleteStep{sub: sub, ph: ph, cur: cur, then: then, count: count}
}

func (s *deleteStep) subject() subject { return s.sub }

func (s *deleteStep) begin(_ *state.Resource, now time.Time) (*state.Resource, Event) {
	p := *s.cur
	p.Status = string(s.ph.inProgress)
	p.Pending = &state.PendingOperation{Op: state.PendingDelete, PhysicalID: s.cur.PhysicalID, StartedAt: now}
	return &p, Event{PhysicalID: s.cur.PhysicalID, Status: s.ph.inProgress, Reason: s.ph.reason}
}

func (s *deleteStep) call(ctx context.Context, p Provider) error {
	err := p.Delete(ctx, resource.DeleteRequest{Type: s.cur.Type, PhysicalID: s.cur.PhysicalID, Properties: s.cur.Inputs, Outputs: s.cur.Outputs})
	if errors.Is(err, resource.ErrNotFound) {
		return nil
	}
	return err
}

func (s *deleteStep) succeeded(*state.Resource) stepOutcome {
	e := Event{PhysicalID: s.cur.PhysicalID, Status: s.ph.complete, Reason: s.ph.doneReason}
	switch {
	case s.then != nil:
		next := *s.then
		next.Pending = nil
		return stepOutcome{next: &next, event: e, count: s.count}
	case len(s.cur.Replaced) > 0:
		// Objects left by replacements are deleted first (TeardownGraph), so this keeps nothing live.
		kept := *s.cur
		kept.PhysicalID, kept.Pending, kept.Status = "", nil, string(s.ph.complete)
		return stepOutcome{next: &kept, event: e, count: s.count}
	}
	return stepOutcome{drop: true, event: e, count: s.count}
}

func (s *deleteStep) failed(_ *state.Resource, err error) stepOutcome {
	kept := *s.cur
	kept.Status, kept.Pending = string(s.ph.failed), nil
	return stepOutcome{next: &kept, event: Event{PhysicalID: s.cur.PhysicalID, Status: s.ph.failed, Reason: err.Error()}}
}

// deleteReplacedStep deletes an object left by a replacement (listed in the record's Replaced), in the
// cleanup phase or by destroy. Pending operation: deleting, with that object's physical ID. It counts
// nothing: the replacement was counted when the new object was made.
type deleteReplacedStep struct {
	sub subject
	obj state.Object
}

// newDeleteReplacedStep returns the step that deletes obj, an object left by a replacement of logicalID in
// stack. obj has a physical ID.
func newDeleteReplacedStep(stack, logicalID string, obj state.Object, t turn) *deleteReplacedStep {
	sub := newSubject("delete", stack, logicalID, obj.Type, obj.Provider, t,
		unless(obj.PhysicalID != "", "no replaced object to delete"))
	return &deleteReplacedStep{sub: sub, obj: obj}
}

func (s *deleteReplacedStep) subject() subject { return s.sub }

func (s *deleteReplacedStep) begin(cur *state.Resource, now time.Time) (*state.Resource, Event) {
	p := *cur
	p.Pending = &state.PendingOperation{Op: state.PendingDelete, PhysicalID: s.obj.PhysicalID, StartedAt: now}
	return &p, Event{PhysicalID: s.obj.PhysicalID, Status: DeleteInProgress, Reason: "old object replaced by a new one"}
}

func (s *deleteReplacedStep) call(ctx context.Context, p Provider) error {
	err := p.Delete(ctx, resource.DeleteRequest{Type: s.obj.Type, PhysicalID: s.obj.PhysicalID, Properties: s.obj.Inputs, Outputs: s.obj.Outputs})
	if errors.Is(err, resource.ErrNotFound) {
		return nil
	}
	return err
}

func (s *deleteReplacedStep) succeeded(cur *state.Resource) stepOutcome {
	return forgetReplaced(cur, s.obj.PhysicalID, Event{PhysicalID: s.obj.PhysicalID, Status: DeleteComplete}, "")
}

func (s *deleteReplacedStep) failed(cur *state.Resource, err error) stepOutcome {
	kept := *cur
	kept.Pending = nil // the old object still exists and stays listed; the next deploy deletes it
	return stepOutcome{next: &kept, event: Event{PhysicalID: s.obj.PhysicalID, Status: DeleteFailed, Reason: err.Error()}}
}

// forgetReplaced returns the outcome that removes a deleted object from cur's list of replaced objects
// (and the record itself when nothing of it is left), clearing the pending operation.
func forgetReplaced(cur *state.Resource, physicalID string, e Event, count Status) stepOutcome {
	next := *cur
	next.Pending = nil
	next.Replaced = slices.DeleteFunc(slices.Clone(cur.Replaced), func(o state.Object) bool { return o.PhysicalID == physicalID })
	if next.PhysicalID == "" && len(next.Replaced) == 0 {
		return stepOutcome{drop: true, event: e, count: count}
	}
	return stepOutcome{next: &next, event: e, count: count}
}

// readOnly is embedded by the steps whose call changes nothing at the provider (reads): they write no
// pending record before it.
type readOnly struct{}

func (readOnly) begin(*state.Resource, time.Time) (*state.Resource, Event) { return nil, Event{} }

// readStep reads one recorded object (refresh, and the settling of an interrupted update or delete). It
// changes nothing at the provider, so it has no pending operation; its outcome is decided by refreshed.
type readStep struct {
	readOnly
	sub    subject
	rec    *state.Resource
	schema resource.Schema

	live resource.ReadResult
	gone bool
}

// newReadStep returns the step that reads rec's object in stack (refresh); schema is its type's.
func newReadStep(stack string, rec *state.Resource, schema resource.Schema) *readStep {
	return &readStep{sub: newSubject("read", stack, rec.LogicalID, rec.Type, rec.Provider, turn{}), rec: rec, schema: schema}
}

func (s *readStep) subject() subject { return s.sub }

func (s *readStep) call(ctx context.Context, p Provider) error {
	var err error
	s.live, err = p.Read(ctx, resource.ReadRequest{Type: s.rec.Type, PhysicalID: s.rec.PhysicalID, Properties: s.rec.Inputs, Outputs: s.rec.Outputs})
	if errors.Is(err, resource.ErrNotFound) {
		s.gone = true
		return nil
	}
	return err
}

func (s *readStep) succeeded(*state.Resource) stepOutcome {
	return refreshed(s.rec, s.schema, s.live, s.gone)
}

func (s *readStep) failed(_ *state.Resource, err error) stepOutcome { return readFailed(s.rec, err) }

func readFailed(rec *state.Resource, err error) stepOutcome {
	return stepOutcome{event: Event{PhysicalID: rec.PhysicalID, Status: DetectionFailed, Reason: "refresh failed: " + err.Error()}}
}

// locateStep settles a create that was interrupted between its call and its record: the object is
// looked up by the inputs that were sent (Provider.Locate), then read.
type locateStep struct {
	readOnly
	sub subject
	rec *state.Resource

	id       string
	live     resource.ReadResult
	notFound bool
}

// newLocateStep returns the step that settles rec's interrupted create in stack. rec has a pending
// operation and no physical ID.
func newLocateStep(stack string, rec *state.Resource) *locateStep {
	sub := newSubject("locate", stack, rec.LogicalID, rec.Type, rec.Provider, turn{},
		unless(rec.Pending != nil && rec.PhysicalID == "", "no interrupted create to settle"))
	return &locateStep{sub: sub, rec: rec}
}

func (s *locateStep) subject() subject { return s.sub }

func (s *locateStep) call(ctx context.Context, p Provider) error {
	req := resource.CreateRequest{Type: s.rec.Type, LogicalID: s.rec.LogicalID, Properties: s.rec.Pending.Inputs}
	var err error
	if s.id, err = p.Locate(ctx, req); err == nil {
		s.live, err = p.Read(ctx, resource.ReadRequest{Type: s.rec.Type, PhysicalID: s.id, Properties: s.rec.Pending.Inputs})
	}
	if errors.Is(err, resource.ErrNotFound) {
		s.notFound = true
		return nil
	}
	return err
}

func (s *locateStep) succeeded(*state.Resource) stepOutcome {
	if s.notFound {
		e := Event{Status: CreateFailed, Reason: "recovered: the interrupted create had not happened; record cleared"}
		if len(s.rec.Replaced) > 0 {
			next := *s.rec
			next.Pending, next.Status = nil, string(CreateFailed)
			e.Reason = "recovered: the interrupted create had not happened"
			return stepOutcome{next: &next, event: e, count: CreateFailed}
		}
		return stepOutcome{drop: true, event: e, count: CreateFailed}
	}
	next := *s.rec
	next.PhysicalID, next.Inputs, next.Pending, next.Status = s.id, s.rec.Pending.Inputs, nil, string(CreateComplete)
	next.Outputs = withCRN(cloneProps(s.live.Outputs), s.rec.Type, s.id)
	return stepOutcome{next: &next, count: CreateComplete,
		event: Event{PhysicalID: s.id, Status: CreateComplete, Reason: "recovered: the interrupted create had succeeded; recorded"}}
}

func (s *locateStep) failed(_ *state.Resource, err error) stepOutcome { return readFailed(s.rec, err) }

// readReplacedStep settles an interrupted delete of an object left by a replacement: gone → it leaves the
// record's replaced list; still there → it stays listed, and the next deploy's cleanup deletes it.
type readReplacedStep struct {
	readOnly
	sub  subject
	rec  *state.Resource
	obj  state.Object
	gone bool
}

// newReadReplacedStep returns the step that settles the interrupted delete of obj, an object left by a
// replacement and listed in rec, in stack. obj has a physical ID.
func newReadReplacedStep(stack string, rec *state.Resource, obj state.Object) *readReplacedStep {
	sub := newSubject("read", stack, rec.LogicalID, obj.Type, obj.Provider, turn{},
		unless(obj.PhysicalID != "", "no replaced object to read"))
	return &readReplacedStep{sub: sub, rec: rec, obj: obj}
}

func (s *readReplacedStep) subject() subject { return s.sub }

func (s *readReplacedStep) call(ctx context.Context, p Provider) error {
	_, err := p.Read(ctx, resource.ReadRequest{Type: s.obj.Type, PhysicalID: s.obj.PhysicalID, Properties: s.obj.Inputs, Outputs: s.obj.Outputs})
	if errors.Is(err, resource.ErrNotFound) {
		s.gone = true
		return nil
	}
	return err
}

func (s *readReplacedStep) succeeded(cur *state.Resource) stepOutcome {
	id := s.obj.PhysicalID
	if s.gone {
		return forgetReplaced(cur, id, Event{PhysicalID: id, Status: DeleteComplete,
			Reason: "recovered: the interrupted delete of the replaced object had happened"}, DeleteComplete)
	}
	next := *cur
	next.Pending = nil
	return stepOutcome{next: &next, count: DeleteFailed,
		event: Event{PhysicalID: id, Status: DeleteFailed, Reason: "recovered: the replaced object still exists; the next deploy deletes it"}}
}

func (s *readReplacedStep) failed(_ *state.Resource, err error) stepOutcome {
	return readFailed(s.rec, err)
}

// importStep reads an object that exists at its provider, by the physical ID the user gave, and records
// it as the resource the assembly declares (cdkx import). Reading changes nothing: no pending operation.
type importStep struct {
	readOnly
	sub        subject
	physicalID string
	schema     resource.Schema
	template   *state.Resource // the record but for inputs, outputs and status

	live resource.ReadResult
}

// newImportStep returns the step that reads the object physicalID and records it in stack as template (the
// record but for inputs, outputs and status); schema is its type's. physicalID is not empty.
func newImportStep(stack string, template *state.Resource, physicalID string, schema resource.Schema) *importStep {
	sub := newSubject("import", stack, template.LogicalID, template.Type, template.Provider, turn{},
		unless(physicalID != "", "no physical ID to import"))
	return &importStep{sub: sub, physicalID: physicalID, schema: schema, template: template}
}

func (s *importStep) subject() subject { return s.sub }

func (s *importStep) call(ctx context.Context, p Provider) error {
	var err error
	s.live, err = p.Read(ctx, resource.ReadRequest{Type: s.sub.typ, PhysicalID: s.physicalID})
	return err
}

func (s *importStep) succeeded(*state.Resource) stepOutcome {
	rec := *s.template
	rec.Inputs = resource.Properties{}
	for k, v := range s.live.Properties {
		if _, known := s.schema.Properties[k]; known || s.schema.AllowUnknownProperties {
			rec.Inputs[k] = v
		}
	}
	rec.PhysicalID, rec.Status = s.physicalID, string(ImportComplete)
	rec.Outputs = withCRN(cloneProps(s.live.Outputs), s.sub.typ, s.physicalID)
	return stepOutcome{next: &rec, count: ImportComplete, event: Event{PhysicalID: s.physicalID, Status: ImportComplete,
		Reason: "read from the provider; the next diff shows how the template differs"}}
}

func (s *importStep) failed(_ *state.Resource, err error) stepOutcome {
	return stepOutcome{event: Event{PhysicalID: s.physicalID, Status: ImportFailed, Reason: err.Error()}}
}

func withCRN(outs resource.Properties, typ, physicalID string) resource.Properties {
	if outs == nil {
		outs = resource.Properties{}
	}
	outs["crn"] = resource.CRN(typ, physicalID)
	return outs
}

func cloneProps(p resource.Properties) resource.Properties {
	out := make(resource.Properties, len(p))
	for k, v := range p {
		out[k] = resource.Clone(v)
	}
	return out
}
