//go:build !unix

package fakemp

import (
	"errors"
	"os"
)

// lockFile fails: the fake keeps its state under an flock, which only Unix systems have.
func lockFile(*os.File) error { return errors.New("multipass-fake needs flock (a Unix system)") }

// unlockFile does nothing where lockFile cannot lock.
func unlockFile(*os.File) error { return nil }
