package cli

import "net"

// IsLoopback reports whether the host of addr (host:port) is a loopback address or localhost: where
// cdkx server and cdkx console listen unless told otherwise. An address that does not parse is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
