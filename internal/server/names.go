package server

import "regexp"

// validName matches organization, project, stack and token names.
var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
