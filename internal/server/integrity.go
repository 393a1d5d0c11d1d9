package server

import (
	"errors"
	"net/http"

	"github.com/cdkx-dev/cdkx/internal/server/integrity"
)

// The integrity rules (package integrity) as the handlers answer them.

// docIndex is the integrity index of a stored text (checkpoints.go caches them).
type docIndex = integrity.Index

// docKind selects the integrity rules a write is checked against.
type docKind = integrity.Kind

const (
	pulumiDoc = integrity.Pulumi
	importDoc = integrity.Import
	cdkxDoc   = integrity.Cdkx
)

// asAPIError turns an integrity error into the 400 a client gets.
func asAPIError(err error) error {
	var de *integrity.Error
	if errors.As(err, &de) {
		return errorf(http.StatusBadRequest, "Bad Request: the resulting deployment is invalid at %v; nothing was stored", de)
	}
	return err
}

// indexDeployment reads text whole, checks it against the rules of kind and returns its index; a 400
// apiError when it breaks one.
func indexDeployment(text []byte, kind docKind) (*docIndex, error) {
	ix, err := integrity.Check(text, kind)
	return ix, asAPIError(err)
}

// validateDeployment checks data against the rules of kind and returns its number of resources; a 400
// apiError when it breaks one.
func validateDeployment(data []byte, kind docKind) (int, error) {
	n, err := integrity.Validate(data, kind)
	return n, asAPIError(err)
}
