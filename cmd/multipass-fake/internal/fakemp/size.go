package fakemp

import (
	"fmt"
	"regexp"
	"strconv"
)

// memorySize matches what mp::in_bytes accepts (src/utils/memory_size.cpp): an integer, or a decimal
// followed by K, M or G, optionally followed by B or iB (any case), surrounded by optional whitespace.
// Go's regexp has no lookahead, so the "decimals need a unit" rule is checked after matching.
var memorySize = regexp.MustCompile(`(?i)^\s*(\d+)(?:\.(\d+))?(?:([KMG])(?:i?B)?|B)?\s*$`)

// errInvalidMemorySize is mp::InvalidMemorySizeException's text
// (include/multipass/exceptions/invalid_memory_size_exception.h).
func errInvalidMemorySize(v string) error {
	return fmt.Errorf("%s is not a valid memory size - need a non-negative integer (in base 10) "+
		"or a decimal followed by K, M, or G (e.g. 1234B, 42MiB, 0.5G)", v)
}

// parseMemorySize returns the number of bytes of a Multipass size such as "1G", "512M", "1.5GiB" or
// "1073741824": units are binary (K = 1024), decimals are truncated to whole bytes, as mp::in_bytes
// does. A malformed value gets errInvalidMemorySize.
func parseMemorySize(v string) (int64, error) {
	m := memorySize.FindStringSubmatch(v)
	if m == nil || (m[2] != "" && m[3] == "") {
		return 0, errInvalidMemorySize(v)
	}
	whole, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, errInvalidMemorySize(v)
	}
	var unit int64 = 1
	switch m[3] {
	case "k", "K":
		unit = 1 << 10
	case "m", "M":
		unit = 1 << 20
	case "g", "G":
		unit = 1 << 30
	}
	bytes := whole * unit
	if m[2] != "" {
		frac, err := strconv.ParseFloat("0."+m[2], 64)
		if err != nil {
			return 0, errInvalidMemorySize(v)
		}
		bytes += int64(frac * float64(unit))
	}
	return bytes, nil
}
