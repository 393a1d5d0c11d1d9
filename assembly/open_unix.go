//go:build unix

package assembly

import (
	"os"
	"syscall"
)

// openFlags open a file of the assembly without blocking: a FIFO swapped in after the check opens at once
// (and is then refused) instead of waiting for a writer.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
