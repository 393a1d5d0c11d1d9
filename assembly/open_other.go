//go:build !unix

package assembly

import "os"

// openFlags open a file of the assembly; only Unix has FIFOs that block an open.
const openFlags = os.O_RDONLY
