// Package journal replays the Pulumi engine's journal entries (apitype.JournalEntry, version 1) onto a
// deployment, as the Pulumi engine's JournalReplayer does: pure, without storage or HTTP.
//
// The replay follows the engine's (pkg/backend JournalReplayer, GenerateDeployment), in sequence-ID
// order:
//   - begin records an operation in flight; success, failure and refresh-success end it. Operations
//     still in flight are the deployment's pending_operations, after which come the base checkpoint's
//     pending "creating" operations (those need the user's attention); the base's other pending
//     operations are dropped, as the engine drops them once an update runs.
//   - success appends its state to the resources this update produced (in the order they succeeded);
//     removeOld/removeNew drop a base resource (by index) or a produced one (by operation ID),
//     deleteOld/deleteNew and pendingReplacementOld/New mark one "delete" or "pendingReplacement".
//   - refresh-success and outputs replace a base resource (removeOld) or a produced one (removeNew) by
//     their state; a refresh-success without a state drops it.
//   - write replaces the base snapshot; secrets-manager sets secrets_providers; snippets sets snippets;
//     extension-parameterize adds an extension (the base's win); rebuilt-base-state makes the
//     deployment replayed so far the new base.
//   - The deployment lists the produced resources, then the base's resources that were not dropped,
//     with their replacements and marks. After a refresh, dependencies, property dependencies,
//     deletedWith, replaceWith on resources no longer present (or listed later) are removed, and
//     parents no longer present cleared.
//
// Fields of states, operations and snapshots are kept as sent (unknown ones too); the manifest's time
// is the time of the replay. The deployment is version 3, or 4 with the base's features plus byteString
// (an entry required it) and snippets-prototype (snippets are set).
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"time"
)

// ErrEntry is the error (errors.Is) of an entry that is malformed or cannot apply: the client's fault.
var ErrEntry = errors.New("bad journal entry")

// ErrBase is the error (errors.Is) of a base deployment that entries cannot be replayed onto.
var ErrBase = errors.New("bad base deployment")

// replayError is an ErrEntry or ErrBase with its message.
type replayError struct {
	kind error
	msg  string
}

func (e *replayError) Error() string        { return e.msg }
func (e *replayError) Is(target error) bool { return target == e.kind }

func entryErrorf(format string, args ...any) error {
	return &replayError{ErrEntry, fmt.Sprintf(format, args...)}
}

func baseErrorf(format string, args ...any) error {
	return &replayError{ErrBase, fmt.Sprintf(format, args...)}
}

// Version is the journal format this package replays: entries of version 1, kinds 0 to 9. Version
// 2 (state-migration entries) is not offered.
const Version = 1

// Journal entry kinds (apitype.JournalEntryKind).
const (
	entryBegin                 = 0
	entrySuccess               = 1
	entryFailure               = 2
	entryRefreshSuccess        = 3
	entryOutputs               = 4
	entryWrite                 = 5
	entrySecretsManager        = 6
	entryRebuiltBaseState      = 7
	entryExtensionParameterize = 8
	entrySnippets              = 9
	entryStateMigration        = 10
)

// entryKindNames are the names of the kinds (apitype.JournalEntryKind.String).
var entryKindNames = [...]string{"begin", "success", "failure", "refresh-success", "outputs", "write",
	"secrets-manager", "rebuilt-base-state", "extension-parameterize", "snippets", "state-migration"}

// Entry mirrors apitype.JournalEntry (version 1). States, operations and snapshots are kept as
// raw JSON: the replay moves them as they are.
type Entry struct {
	Version               *int            `json:"version"`
	Kind                  *int            `json:"kind"`
	SequenceID            int64           `json:"sequenceID"`
	OperationID           int64           `json:"operationID"`
	RemoveOld             *int64          `json:"removeOld"`
	RemoveNew             *int64          `json:"removeNew"`
	PendingReplacementOld *int64          `json:"pendingReplacementOld,omitempty"`
	PendingReplacementNew *int64          `json:"pendingReplacementNew,omitempty"`
	DeleteOld             *int64          `json:"deleteOld,omitempty"`
	DeleteNew             *int64          `json:"deleteNew,omitempty"`
	State                 json.RawMessage `json:"state,omitempty"`
	Operation             json.RawMessage `json:"operation,omitempty"`
	IsRefresh             bool            `json:"isRefresh,omitempty"`
	SecretsProvider       json.RawMessage `json:"secretsProvider,omitempty"`
	Snippets              json.RawMessage `json:"snippets,omitempty"`
	NewSnapshot           json.RawMessage `json:"newSnapshot,omitempty"`
	ExtensionRef          *string         `json:"extensionRef,omitempty"`
	Extension             json.RawMessage `json:"extension,omitempty"`
	RequiresByteString    bool            `json:"requiresByteString,omitempty"`
}

// kind returns the entry's kind.
func (e *Entry) kind() int { return *e.Kind }

// describe names the entry in error messages.
func (e *Entry) describe() string {
	return fmt.Sprintf("journal entry %d (%s)", e.SequenceID, entryKindNames[e.kind()])
}

// present tells whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// Decode decodes one journal entry (JSON) and checks its fields on their own: a kind it replays, a
// version it reads, a sequence ID and operation ID of 1 or more, states and operations with a urn and a
// type, what each kind needs. It does not check the entry against the journal so far (Replayer.Apply).
func Decode(raw json.RawMessage) (*Entry, error) {
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("not a journal entry: %w", err)
	}
	if e.Kind == nil {
		return nil, errors.New("no kind")
	}
	switch k := *e.Kind; {
	case k == entryStateMigration:
		return nil, fmt.Errorf("sequence ID %d: state-migration entries need journal version 2; the server offers %d", e.SequenceID, Version)
	case k < 0 || k > entrySnippets:
		return nil, fmt.Errorf("sequence ID %d: unknown kind %d", e.SequenceID, k)
	}
	// Version 0 is the format before entries carried a version.
	if e.Version != nil && (*e.Version < 0 || *e.Version > Version) {
		return nil, fmt.Errorf("sequence ID %d: journal entry version %d; the server replays version %d", e.SequenceID, *e.Version, Version)
	}
	if e.SequenceID < 1 {
		return nil, fmt.Errorf("sequence ID %d: sequence IDs start at 1", e.SequenceID)
	}
	what := e.describe()
	switch e.kind() {
	case entryBegin, entrySuccess, entryFailure, entryRefreshSuccess, entryOutputs:
		if e.OperationID < 1 {
			return nil, fmt.Errorf("%s: operation ID %d; operation IDs start at 1", what, e.OperationID)
		}
	}
	for name, ref := range map[string]*int64{"removeOld": e.RemoveOld, "removeNew": e.RemoveNew,
		"pendingReplacementOld": e.PendingReplacementOld, "pendingReplacementNew": e.PendingReplacementNew,
		"deleteOld": e.DeleteOld, "deleteNew": e.DeleteNew} {
		if ref != nil && *ref < 0 {
			return nil, fmt.Errorf("%s: %s is %d", what, name, *ref)
		}
	}
	if present(e.State) {
		if err := checkState(e.State); err != nil {
			return nil, fmt.Errorf("%s: state: %w", what, err)
		}
	}
	if present(e.Operation) {
		var op struct {
			Resource json.RawMessage `json:"resource"`
			Type     string          `json:"type"`
		}
		if err := json.Unmarshal(e.Operation, &op); err != nil || op.Type == "" {
			return nil, fmt.Errorf("%s: the operation is not an object with a resource and a type", what)
		}
		if err := checkState(op.Resource); err != nil {
			return nil, fmt.Errorf("%s: operation resource: %w", what, err)
		}
	}
	switch e.kind() {
	case entryWrite:
		if !present(e.NewSnapshot) {
			return nil, fmt.Errorf("%s: no newSnapshot", what)
		}
		if _, err := parseDeployment(e.NewSnapshot); err != nil {
			return nil, fmt.Errorf("%s: newSnapshot: %w", what, err)
		}
	case entrySecretsManager:
		if present(e.SecretsProvider) {
			var sp struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(e.SecretsProvider, &sp); err != nil || sp.Type == "" {
				return nil, fmt.Errorf("%s: secretsProvider is not an object with a type", what)
			}
		}
	case entryExtensionParameterize:
		if e.ExtensionRef == nil || *e.ExtensionRef == "" || !present(e.Extension) {
			return nil, fmt.Errorf("%s: no extensionRef or extension", what)
		}
	case entrySnippets:
		if present(e.Snippets) {
			var list []json.RawMessage
			if err := json.Unmarshal(e.Snippets, &list); err != nil {
				return nil, fmt.Errorf("%s: snippets is not a list", what)
			}
		}
	}
	return &e, nil
}

// checkState checks that raw is a resource state: an object with a URN and a type.
func checkState(raw json.RawMessage) error {
	var st struct {
		URN  string `json:"urn"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return errors.New("not a resource object")
	}
	if st.URN == "" || st.Type == "" {
		return errors.New("no urn or type")
	}
	return nil
}

// SameJSON tells whether a and b are the same JSON value (a repeat of an entry may be serialized
// differently).
func SameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	decode := func(data []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// Replay replays entries, in order, onto the untyped deployment base and returns the resulting untyped
// deployment (compact) and its number of resources, its manifest stamped with now. An entry that cannot
// apply is an ErrEntry, a base that cannot be replayed onto an ErrBase.
func Replay(base []byte, entries []json.RawMessage, now time.Time) ([]byte, int, error) {
	r, err := NewReplayer(base)
	if err != nil {
		return nil, 0, err
	}
	for _, raw := range entries {
		if err := r.Apply(raw, now); err != nil {
			return nil, 0, err
		}
	}
	return r.Bytes(now)
}

// Replayer replays journal entries onto a base deployment, one at a time: Apply costs O(size of the
// entry), Bytes O(size of the deployment) in copying (no parsing, except of resources that a refresh
// may have left with references to drop). A Replayer whose Apply failed must not be used again. It is
// not safe for concurrent use.
type Replayer struct {
	version  int
	features []string
	r        *replayer
	applied  int
}

// NewReplayer returns a Replayer of the untyped deployment base (version 3 or 4): an ErrBase when base
// is not one.
func NewReplayer(base []byte) (*Replayer, error) {
	var head struct {
		Version    int             `json:"version"`
		Features   []string        `json:"features"`
		Deployment json.RawMessage `json:"deployment"`
	}
	if err := json.Unmarshal(base, &head); err != nil || (head.Version != 3 && head.Version != 4) {
		return nil, baseErrorf("the update's base checkpoint is not a version 3 or 4 deployment; it cannot be replayed onto")
	}
	doc, err := parseDeployment(head.Deployment)
	if err != nil {
		return nil, baseErrorf("the update's base checkpoint cannot be replayed onto: %v", err)
	}
	return &Replayer{version: head.Version, features: head.Features, r: newReplayer(doc)}, nil
}

// Apply replays one entry (apitype.JournalEntry, JSON): an ErrEntry when it is malformed or cannot
// apply, an ErrBase when the base it applies to is broken.
func (r *Replayer) Apply(raw json.RawMessage, now time.Time) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return entryErrorf("a journal entry is not JSON: %v", err)
	}
	e, err := Decode(buf.Bytes())
	if err != nil {
		return entryErrorf("%v", err)
	}
	if err := r.r.apply(e, now); err != nil {
		return err
	}
	r.applied++
	return nil
}

// Applied returns the number of entries applied.
func (r *Replayer) Applied() int { return r.applied }

// Bytes returns the deployment the entries applied so far give, as a compact untyped deployment (its
// manifest stamped with now), and its number of resources.
func (r *Replayer) Bytes(now time.Time) ([]byte, int, error) {
	out, err := r.r.generate(now)
	if err != nil {
		return nil, 0, err
	}
	features := slices.Clone(r.features)
	if r.r.byteString {
		features = append(features, "byteString")
	}
	if snippets := out.fields.get("snippets"); present(snippets) && !bytes.Equal(bytes.TrimSpace(snippets), []byte("[]")) {
		features = append(features, "snippets-prototype")
	}
	slices.Sort(features)
	features = slices.Compact(features)
	data, err := out.untyped(features)
	return data, len(out.resources), err
}

// deploymentDoc is a deployment (apitype.DeploymentV3) with its resources and pending operations apart
// and its other fields kept as they are.
type deploymentDoc struct {
	fields    jsonObject
	resources []json.RawMessage
	pending   []json.RawMessage
}

// parseDeployment parses a deployment object.
func parseDeployment(raw json.RawMessage) (*deploymentDoc, error) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	d := &deploymentDoc{}
	for _, f := range obj {
		// Pieces are kept compact, so that the deployment built of them is.
		var buf bytes.Buffer
		if err := json.Compact(&buf, f.value); err != nil {
			return nil, err
		}
		f.value = buf.Bytes()
		switch f.key {
		case "resources":
			if present(f.value) {
				if err := json.Unmarshal(f.value, &d.resources); err != nil {
					return nil, errors.New("resources is not a list")
				}
			}
		case "pending_operations":
			if present(f.value) {
				if err := json.Unmarshal(f.value, &d.pending); err != nil {
					return nil, errors.New("pending_operations is not a list")
				}
			}
		default:
			d.fields = append(d.fields, f)
		}
	}
	return d, nil
}

// deploymentKeyOrder is the order of apitype.DeploymentV3's fields; others follow in their order.
var deploymentKeyOrder = []string{"manifest", "secrets_providers", "resources", "pending_operations", "metadata"}

// untyped returns d as an untyped deployment, compact: version 3, or 4 with features.
func (d *deploymentDoc) untyped(features []string) ([]byte, error) {
	b := []byte(`{"version":3,`)
	if len(features) > 0 {
		list, err := json.Marshal(features)
		if err != nil {
			return nil, err
		}
		b = append([]byte(`{"version":4,"features":`), list...)
		b = append(b, ',')
	}
	b = append(b, `"deployment":{`...)
	first := true
	field := func(key string, value []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, key)
		b = append(b, ':')
		b = append(b, value...)
	}
	list := func(items []json.RawMessage) []byte {
		l := []byte{'['}
		for i, it := range items {
			if i > 0 {
				l = append(l, ',')
			}
			l = append(l, it...)
		}
		return append(l, ']')
	}
	for _, key := range deploymentKeyOrder {
		switch key {
		case "resources":
			field(key, list(d.resources))
		case "pending_operations":
			if len(d.pending) > 0 {
				field(key, list(d.pending))
			}
		default:
			if v := d.fields.get(key); v != nil {
				field(key, v)
			}
		}
	}
	for _, f := range d.fields {
		if !slices.Contains(deploymentKeyOrder, f.key) {
			field(f.key, f.value)
		}
	}
	return append(b, "}}"...), nil
}

// newResource is a resource state an operation of the update produced, and the marks set on it since.
type newResource struct {
	state                      json.RawMessage
	delete, pendingReplacement bool
	// marked is state with its marks, once built (nil until then, and after the marks change).
	marked json.RawMessage
}

// inFlight is an operation that began and has not ended.
type inFlight struct {
	id        int64
	operation json.RawMessage // nil for a begin without an operation (a same or a refresh step)
}

// replayer replays journal entries onto a base deployment (the Pulumi engine's JournalReplayer).
type replayer struct {
	base *deploymentDoc
	// news are the states operations produced, in the order they succeeded; byOperation indexes them.
	news        []*newResource
	byOperation map[int64]int
	// dropNew are the operations whose produced state is dropped.
	dropNew map[int64]bool
	// dropOld, replaceOld, deleteOld and pendingOld are the base resources (by index) dropped, replaced,
	// marked delete and marked pendingReplacement.
	dropOld    map[int64]bool
	replaceOld map[int64]json.RawMessage
	deleteOld  map[int64]bool
	pendingOld map[int64]bool
	// markedOld caches the marked states of the base resources marked delete or pendingReplacement.
	markedOld map[int64]json.RawMessage
	// inFlight are the operations begun and not ended, in the order they began.
	inFlight []inFlight
	// ended are the operations that ended.
	ended map[int64]bool
	// extensions are those extension-parameterize entries added.
	extensions jsonObject
	// refreshed: an entry was part of a refresh; byteString: an entry encoded non-UTF-8 strings.
	refreshed, byteString bool
}

func newReplayer(base *deploymentDoc) *replayer {
	r := &replayer{base: base, ended: map[int64]bool{}}
	r.reset()
	return r
}

// reset forgets what was replayed onto the base (rebuilt-base-state).
func (r *replayer) reset() {
	r.news, r.byOperation, r.dropNew = nil, map[int64]int{}, map[int64]bool{}
	r.dropOld, r.replaceOld, r.deleteOld, r.pendingOld = map[int64]bool{}, map[int64]json.RawMessage{}, map[int64]bool{}, map[int64]bool{}
	r.markedOld = map[int64]json.RawMessage{}
	r.inFlight, r.extensions = nil, nil
}

// old checks that index names a resource of the base.
func (r *replayer) old(e *Entry, field string, index int64) error {
	if index >= int64(len(r.base.resources)) {
		return entryErrorf("%s: %s %d is not the index of a resource of the base snapshot (%d resources)",
			e.describe(), field, index, len(r.base.resources))
	}
	return nil
}

// produced returns the index in news of the state operation produced.
func (r *replayer) produced(e *Entry, field string, operation int64) (int, error) {
	i, ok := r.byOperation[operation]
	if !ok {
		return 0, entryErrorf("%s: %s %d names no operation of this update that produced a resource",
			e.describe(), field, operation)
	}
	return i, nil
}

// end ends the entry's operation.
func (r *replayer) end(e *Entry) error {
	if r.ended[e.OperationID] {
		return entryErrorf("%s: operation %d already ended", e.describe(), e.OperationID)
	}
	r.ended[e.OperationID] = true
	r.inFlight = slices.DeleteFunc(r.inFlight, func(f inFlight) bool { return f.id == e.OperationID })
	return nil
}

// apply replays one entry.
func (r *replayer) apply(e *Entry, now time.Time) error {
	if e.RequiresByteString {
		r.byteString = true
	}
	switch e.kind() {
	case entryBegin:
		if r.ended[e.OperationID] || slices.ContainsFunc(r.inFlight, func(f inFlight) bool { return f.id == e.OperationID }) {
			return entryErrorf("%s: operation %d already began", e.describe(), e.OperationID)
		}
		f := inFlight{id: e.OperationID}
		if present(e.Operation) {
			f.operation = e.Operation
		}
		r.inFlight = append(r.inFlight, f)
	case entrySuccess:
		return r.success(e)
	case entryFailure:
		return r.end(e)
	case entryRefreshSuccess:
		if err := r.end(e); err != nil {
			return err
		}
		r.refreshed = true
		return r.replace(e, true)
	case entryOutputs:
		return r.replace(e, false)
	case entryWrite:
		doc, err := parseDeployment(e.NewSnapshot)
		if err != nil {
			return entryErrorf("%s: newSnapshot: %v", e.describe(), err)
		}
		r.base, r.markedOld = doc, map[int64]json.RawMessage{}
	case entrySecretsManager:
		if present(e.SecretsProvider) && !SameJSON(r.base.fields.get("secrets_providers"), e.SecretsProvider) {
			r.base.fields.set("secrets_providers", e.SecretsProvider)
		}
	case entrySnippets:
		if present(e.Snippets) {
			r.base.fields.set("snippets", e.Snippets)
		} else {
			r.base.fields.del("snippets")
		}
	case entryExtensionParameterize:
		r.extensions.set(*e.ExtensionRef, e.Extension)
	case entryRebuiltBaseState:
		doc, err := r.generate(now)
		if err != nil {
			return err
		}
		r.base = doc
		r.reset()
	}
	return nil
}

// success replays a success entry.
func (r *replayer) success(e *Entry) error {
	if err := r.end(e); err != nil {
		return err
	}
	if e.IsRefresh {
		r.refreshed = true
	}
	if e.RemoveOld != nil {
		if err := r.old(e, "removeOld", *e.RemoveOld); err != nil {
			return err
		}
	}
	if e.RemoveNew != nil {
		if _, err := r.produced(e, "removeNew", *e.RemoveNew); err != nil {
			return err
		}
	}
	if e.DeleteOld != nil {
		if err := r.old(e, "deleteOld", *e.DeleteOld); err != nil {
			return err
		}
	}
	if e.PendingReplacementOld != nil {
		if err := r.old(e, "pendingReplacementOld", *e.PendingReplacementOld); err != nil {
			return err
		}
	}
	var deleteNew, pendingNew *newResource
	if e.DeleteNew != nil {
		i, err := r.produced(e, "deleteNew", *e.DeleteNew)
		if err != nil {
			return err
		}
		deleteNew = r.news[i]
	}
	if e.PendingReplacementNew != nil {
		i, err := r.produced(e, "pendingReplacementNew", *e.PendingReplacementNew)
		if err != nil {
			return err
		}
		pendingNew = r.news[i]
	}
	// Checked: apply.
	if present(e.State) {
		r.byOperation[e.OperationID] = len(r.news)
		r.news = append(r.news, &newResource{state: e.State})
	}
	if e.RemoveOld != nil {
		r.dropOld[*e.RemoveOld] = true
	}
	if e.RemoveNew != nil {
		r.dropNew[*e.RemoveNew] = true
	}
	if e.DeleteOld != nil {
		r.deleteOld[*e.DeleteOld] = true
		delete(r.markedOld, *e.DeleteOld)
	}
	if e.PendingReplacementOld != nil {
		r.pendingOld[*e.PendingReplacementOld] = true
		delete(r.markedOld, *e.PendingReplacementOld)
	}
	if deleteNew != nil {
		deleteNew.delete, deleteNew.marked = true, nil
	}
	if pendingNew != nil {
		pendingNew.pendingReplacement, pendingNew.marked = true, nil
	}
	return nil
}

// replace replays a refresh-success (refresh) or an outputs entry: its state replaces the resource
// removeOld or removeNew names; without a state, a refresh drops it.
func (r *replayer) replace(e *Entry, refresh bool) error {
	newIndex := -1
	if e.RemoveOld != nil {
		if err := r.old(e, "removeOld", *e.RemoveOld); err != nil {
			return err
		}
	}
	if e.RemoveNew != nil {
		i, err := r.produced(e, "removeNew", *e.RemoveNew)
		if err != nil {
			return err
		}
		newIndex = i
	}
	hasState := present(e.State)
	if e.RemoveOld != nil {
		switch {
		case hasState:
			r.replaceOld[*e.RemoveOld] = e.State
			delete(r.markedOld, *e.RemoveOld)
		case refresh:
			r.dropOld[*e.RemoveOld] = true
		}
	}
	if newIndex >= 0 {
		switch {
		case hasState:
			r.news[newIndex] = &newResource{state: e.State}
		case refresh:
			r.dropNew[*e.RemoveNew] = true
		}
	}
	return nil
}

// generate returns the deployment the entries replayed so far give.
func (r *replayer) generate(now time.Time) (*deploymentDoc, error) {
	dropped := map[int]bool{}
	for op := range r.dropNew {
		dropped[r.byOperation[op]] = true
	}
	out := &deploymentDoc{resources: []json.RawMessage{}}
	for i, n := range r.news {
		if dropped[i] {
			continue
		}
		if n.marked == nil {
			var err error
			if n.marked, err = markState(n.state, n.delete, n.pendingReplacement); err != nil {
				return nil, entryErrorf("a journal entry's state: %v", err)
			}
		}
		out.resources = append(out.resources, n.marked)
	}
	for i, res := range r.base.resources {
		index := int64(i)
		if r.dropOld[index] {
			continue
		}
		if st, ok := r.replaceOld[index]; ok {
			res = st
		}
		state, err := res, error(nil)
		if r.deleteOld[index] || r.pendingOld[index] {
			var ok bool
			if state, ok = r.markedOld[index]; !ok {
				if state, err = markState(res, r.deleteOld[index], r.pendingOld[index]); err == nil {
					r.markedOld[index] = state
				}
			}
		}
		if err != nil {
			return nil, baseErrorf("resource %d of the base snapshot: %v", i, err)
		}
		out.resources = append(out.resources, state)
	}
	for _, f := range r.inFlight {
		if f.operation != nil {
			out.pending = append(out.pending, f.operation)
		}
	}
	for _, op := range r.base.pending {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(op, &head) == nil && head.Type == "creating" {
			out.pending = append(out.pending, op)
		}
	}
	if r.refreshed {
		if err := rebuildReferences(out.resources); err != nil {
			return nil, baseErrorf("rebuild the dependencies after a refresh: %v", err)
		}
	}
	out.fields = slices.Clone(r.base.fields)
	manifest, err := stampManifest(out.fields.get("manifest"), now)
	if err != nil {
		return nil, baseErrorf("the base snapshot's manifest: %v", err)
	}
	out.fields.set("manifest", manifest)
	if len(r.extensions) > 0 {
		exts := slices.Clone(r.extensions)
		if baseExts := out.fields.get("extensions"); present(baseExts) {
			obj, err := parseObject(baseExts)
			if err != nil {
				return nil, baseErrorf("the base snapshot's extensions: %v", err)
			}
			for _, f := range obj {
				exts.set(f.key, f.value)
			}
		}
		out.fields.set("extensions", exts.marshal())
	}
	return out, nil
}

// markState returns state marked "delete" and "pendingReplacement" as asked.
func markState(state json.RawMessage, del, pendingReplacement bool) (json.RawMessage, error) {
	if !del && !pendingReplacement {
		return state, nil
	}
	obj, err := parseObject(state)
	if err != nil {
		return nil, err
	}
	if del {
		obj.set("delete", json.RawMessage("true"))
	}
	if pendingReplacement {
		obj.set("pendingReplacement", json.RawMessage("true"))
	}
	return obj.marshal(), nil
}

// stampManifest returns the manifest with the replay's time (an empty one when there is none).
func stampManifest(raw json.RawMessage, now time.Time) (json.RawMessage, error) {
	obj := jsonObject{{"time", nil}, {"magic", json.RawMessage(`""`)}, {"version", json.RawMessage(`""`)}}
	if present(raw) {
		var err error
		if obj, err = parseObject(raw); err != nil {
			return nil, err
		}
	}
	t, err := json.Marshal(now.UTC())
	if err != nil {
		return nil, err
	}
	obj.set("time", t)
	return obj.marshal(), nil
}

// rebuildReferences removes, after a refresh, the references of each resource to resources that are
// not before it in the list (dependencies, property dependencies, deletedWith, replaceWith), and the
// parents that are not in the list, as the engine's rebuildDependencies does.
func rebuildReferences(resources []json.RawMessage) error {
	type refs struct {
		URN                  string              `json:"urn"`
		Parent               string              `json:"parent"`
		Dependencies         []string            `json:"dependencies"`
		PropertyDependencies map[string][]string `json:"propertyDependencies"`
		DeletedWith          string              `json:"deletedWith"`
		ReplaceWith          []string            `json:"replaceWith"`
	}
	all := make([]refs, len(resources))
	listed := make(map[string]bool, len(resources))
	for i, res := range resources {
		if err := json.Unmarshal(res, &all[i]); err != nil {
			return fmt.Errorf("resource %d: %w", i, err)
		}
		listed[all[i].URN] = true
	}
	before := make(map[string]bool, len(resources))
	keep := func(urns []string) []string {
		var kept []string
		for _, u := range urns {
			if before[u] {
				kept = append(kept, u)
			}
		}
		return kept
	}
	for i, ref := range all {
		var obj jsonObject
		edit := func(key string, value any, empty bool) error {
			if obj == nil {
				var err error
				if obj, err = parseObject(resources[i]); err != nil {
					return fmt.Errorf("resource %s: %w", ref.URN, err)
				}
			}
			if empty {
				obj.del(key)
				return nil
			}
			v, err := json.Marshal(value)
			obj.set(key, v)
			return err
		}
		if deps := keep(ref.Dependencies); len(deps) != len(ref.Dependencies) {
			if err := edit("dependencies", deps, len(deps) == 0); err != nil {
				return err
			}
		}
		// As the engine does, a property left without dependencies is dropped (even one that had none).
		propDeps := map[string][]string{}
		for k, urns := range ref.PropertyDependencies {
			if kept := keep(urns); len(kept) > 0 {
				propDeps[k] = kept
			}
		}
		if len(ref.PropertyDependencies) > 0 && !reflect.DeepEqual(propDeps, ref.PropertyDependencies) {
			if err := edit("propertyDependencies", propDeps, len(propDeps) == 0); err != nil {
				return err
			}
		}
		if ref.DeletedWith != "" && !before[ref.DeletedWith] {
			if err := edit("deletedWith", nil, true); err != nil {
				return err
			}
		}
		if rw := keep(ref.ReplaceWith); len(rw) != len(ref.ReplaceWith) {
			if err := edit("replaceWith", rw, len(rw) == 0); err != nil {
				return err
			}
		}
		if ref.Parent != "" && !listed[ref.Parent] {
			if err := edit("parent", nil, true); err != nil {
				return err
			}
		}
		if obj != nil {
			resources[i] = obj.marshal()
		}
		before[ref.URN] = true
	}
	return nil
}

// jsonField is a member of a JSON object.
type jsonField struct {
	key   string
	value json.RawMessage
}

// jsonObject is a JSON object whose members keep their order and their bytes.
type jsonObject []jsonField

// parseObject parses a JSON object; of repeated keys, the last value is kept (as encoding/json does),
// at the first one's place.
func parseObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	obj := jsonObject{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		obj.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// get returns the value of key, or nil.
func (o jsonObject) get(key string) json.RawMessage {
	for _, f := range o {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// set sets key to value, in its place if o has it, else last.
func (o *jsonObject) set(key string, value json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, jsonField{key, value})
}

// del removes key.
func (o *jsonObject) del(key string) {
	*o = slices.DeleteFunc(*o, func(f jsonField) bool { return f.key == key })
}

// marshal returns o as JSON.
func (o jsonObject) marshal() json.RawMessage {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, without escaping HTML characters.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}
