//go:build unix

package multipass

import (
	"os/exec"
	"syscall"
)

// detach puts the child in a process group of its own, so that a Ctrl-C at cdkx's terminal (sent to the
// terminal's foreground group) does not reach it: it stops only when its context ends (Exec).
func detach(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
