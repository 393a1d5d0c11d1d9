package state

import (
	"errors"
	"fmt"
)

// Validate reports why c cannot be committed, or nil: the kind must be known, a PutResource change must
// carry a Resource with a LogicalID, and a DeleteResource change must name a LogicalID. Backends call it
// for every change before they write anything, so that an invalid change leaves state untouched.
func (c Change) Validate() error {
	switch c.Kind {
	case PutResource:
		if c.Resource == nil {
			return errors.New("put change without resource")
		}
		if c.Resource.LogicalID == "" {
			return errors.New("put change with empty logical id")
		}
	case DeleteResource:
		if c.LogicalID == "" {
			return errors.New("delete change without logical id")
		}
	case PutStack:
	default:
		return fmt.Errorf("unknown change kind %q", c.Kind)
	}
	return nil
}

// ValidateChanges calls Validate on each change and returns the first failure, naming its index.
func ValidateChanges(changes []Change) error {
	for i, c := range changes {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
	}
	return nil
}
