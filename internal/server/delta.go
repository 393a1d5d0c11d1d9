package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cdkx-dev/cdkx/internal/server/integrity"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// textEdit is one edit of a deploymentDelta (stateapi.TextEdit); offsets are byte offsets into the
// previous checkpoint's bytes.
type textEdit = stateapi.TextEdit

// parseDelta decodes a deploymentDelta.
func parseDelta(raw json.RawMessage) ([]textEdit, error) {
	if len(raw) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the checkpoint has no deploymentDelta")
	}
	var edits []textEdit
	if err := json.Unmarshal(raw, &edits); err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: deploymentDelta is not a list of edits: %v", err)
	}
	return edits, nil
}

// applyDelta applies edits to prev (integrity.ApplyEdits); 400 when they do not fit it.
func applyDelta(prev []byte, edits []textEdit) ([]byte, error) {
	next, err := integrity.ApplyEdits(prev, edits)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: %v", err)
	}
	return next, nil
}

// checkHash checks that want is the SHA-256 of text (hex, any case): 400 when it is not.
func checkHash(text []byte, want string) error {
	sum := sha256.Sum256(text)
	if got := hex.EncodeToString(sum[:]); got != strings.ToLower(want) {
		return errorf(http.StatusBadRequest, "Bad Request: checkpointHash mismatch: the delta gives %s, want %s", got, want)
	}
	return nil
}
