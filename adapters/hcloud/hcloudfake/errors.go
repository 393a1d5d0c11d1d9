package hcloudfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// apiError is a Hetzner error answer: HTTP status and the envelope {"error":{"code","message","details"}}.
type apiError struct {
	status  int
	code    string
	msg     string
	details any
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

// field is one entry of an invalid_input error's details.fields.
type field struct {
	Name    string `json:"name"`
	Message string `json:"-"`
}

func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{status: http.StatusInternalServerError, code: "server_error", msg: err.Error()}
	}
	body := map[string]any{"code": e.code, "message": e.msg, "details": e.details}
	if e.details == nil {
		body["details"] = map[string]any{}
	}
	writeJSON(w, e.status, map[string]any{"error": body})
}

func errNotFound(what string) error {
	return &apiError{status: http.StatusNotFound, code: "not_found", msg: what + " not found"}
}

// errUnique is 409 uniqueness_error: another object of kind has the same value in fieldName.
func errUnique(kind, fieldName string) error {
	return &apiError{status: http.StatusConflict, code: "uniqueness_error", msg: kind + " " + fieldName + " is already used",
		details: map[string]any{"fields": []map[string]any{{"name": fieldName}}}}
}

func errLocked(kind string, id int64) error {
	return &apiError{status: http.StatusLocked, code: "locked", msg: fmt.Sprintf("%s %d is locked by a running action", kind, id)}
}

func errProtected(kind string, id int64) error {
	return &apiError{status: http.StatusLocked, code: "protected", msg: fmt.Sprintf("%s %d is protected", kind, id)}
}

// errCode is a 422 error with a per-endpoint code such as server_not_stopped.
func errCode(code, msg string) error {
	return &apiError{status: http.StatusUnprocessableEntity, code: code, msg: msg}
}

// invalid is a 422 invalid_input error listing the bad fields.
func invalid(fields ...field) error {
	out := make([]map[string]any, 0, len(fields))
	msgs := make([]string, 0, len(fields))
	for _, f := range fields {
		out = append(out, map[string]any{"name": f.Name, "messages": []string{f.Message}})
		msgs = append(msgs, f.Name+": "+f.Message)
	}
	return &apiError{status: http.StatusUnprocessableEntity, code: "invalid_input", msg: "invalid input in fields: " + strings.Join(msgs, "; "),
		details: map[string]any{"fields": out}}
}

// decode reads a JSON object body into dst after checking that every required top-level field is present
// and not null. A malformed body is 400 json_error; missing fields are 422 invalid_input.
func decode(r *http.Request, dst any, required ...string) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return &apiError{status: http.StatusBadRequest, code: "json_error", msg: err.Error()}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "json_error", msg: "malformed JSON body: " + err.Error()}
	}
	var missing []field
	for _, name := range required {
		if v, ok := m[name]; !ok || string(v) == "null" {
			missing = append(missing, field{name, "Missing data for required field."})
		}
	}
	if len(missing) > 0 {
		return invalid(missing...)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid(field{te.Field, "Not a valid " + te.Type.String() + "."})
		}
		return &apiError{status: http.StatusBadRequest, code: "json_error", msg: err.Error()}
	}
	return nil
}

// pathID parses the {id} path value; a non-integer is 404 like Hetzner.
func pathID(r *http.Request, kind string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, errNotFound(kind)
	}
	return id, nil
}

// byPathID returns the object of kind (e.g. "server") whose ID is the request's {id}, or a 404
// not_found error.
func byPathID[T any](r *http.Request, kind string, objs map[int64]T) (T, error) {
	var zero T
	id, err := pathID(r, kind)
	if err != nil {
		return zero, err
	}
	obj, ok := objs[id]
	if !ok {
		return zero, errNotFound(kind)
	}
	return obj, nil
}

// pagination is meta.pagination of a list answer; null pages mean "none".
type pagination struct {
	Page         int  `json:"page"`
	PerPage      int  `json:"per_page"`
	PreviousPage *int `json:"previous_page"`
	NextPage     *int `json:"next_page"`
	LastPage     *int `json:"last_page"`
	TotalEntries *int `json:"total_entries"`
}

// listQuery holds the common list filters: name (exact), label_selector, page and per_page.
type listQuery struct {
	name     string
	hasName  bool
	selector selector
	page     int
	perPage  int
}

func parseListQuery(r *http.Request) (listQuery, error) {
	q := r.URL.Query()
	lq := listQuery{page: 1, perPage: 25}
	lq.name, lq.hasName = q.Get("name"), q.Has("name")
	if s := q.Get("label_selector"); s != "" {
		sel, err := parseSelector(s)
		if err != nil {
			return lq, invalid(field{"label_selector", err.Error()})
		}
		lq.selector = sel
	}
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return lq, invalid(field{"page", "must be a positive integer"})
		}
		lq.page = n
	}
	if p := q.Get("per_page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return lq, invalid(field{"per_page", "must be a positive integer"})
		}
		lq.perPage = min(n, 50)
	}
	return lq, nil
}

// listed is an object that list endpoints can filter.
type listed interface {
	id() int64
	nameOf() string
	labelsOf() map[string]string
}

// list filters items by lq, sorts them by ID, and answers `{<key>: [render(item)...], meta}`.
func list[T listed](r *http.Request, key string, items []T, render func(T) any, extra func(T) bool) (int, any, error) {
	lq, err := parseListQuery(r)
	if err != nil {
		return 0, nil, err
	}
	var kept []T
	for _, it := range items {
		if lq.hasName && it.nameOf() != lq.name {
			continue
		}
		if lq.selector != nil && !lq.selector.matches(it.labelsOf()) {
			continue
		}
		if extra != nil && !extra(it) {
			continue
		}
		kept = append(kept, it)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].id() < kept[j].id() })
	out, meta := paginate(kept, lq, render)
	return http.StatusOK, map[string]any{key: out, "meta": map[string]any{"pagination": meta}}, nil
}

func paginate[T any](kept []T, lq listQuery, render func(T) any) ([]any, pagination) {
	total := len(kept)
	last := max(1, (total+lq.perPage-1)/lq.perPage)
	out := []any{}
	for i := (lq.page - 1) * lq.perPage; i < total && i < lq.page*lq.perPage; i++ {
		out = append(out, render(kept[i]))
	}
	meta := pagination{Page: lq.page, PerPage: lq.perPage, LastPage: &last, TotalEntries: &total}
	if lq.page > 1 {
		p := min(lq.page-1, last)
		meta.PreviousPage = &p
	}
	if lq.page < last {
		n := lq.page + 1
		meta.NextPage = &n
	}
	return out, meta
}
