package view_test

import (
	"bytes"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
)

// TestDeletions renders destroy's question: stack by stack, physical IDs shown, control characters in
// names made visible; the no-stack and one-stack forms of the last line; a row cut to the width.
func TestDeletions(t *testing.T) {
	var buf bytes.Buffer
	view.Deletions(&buf, []operation.Deletion{
		{Stack: "App", LogicalID: "WwwRecordSet", Type: "PowerDNS::DNS::RecordSet", PhysicalID: "www.example.test./A"},
		{Stack: "App", LogicalID: "Evil\x1b[2J", Type: "PowerDNS::DNS::RecordSet"},
		{Stack: "Zones", LogicalID: "Zone", Type: "PowerDNS::DNS::Zone", PhysicalID: "example.test."},
		{Stack: "Web", LogicalID: "Queue", Type: "RabbitMQ::Queue", PhysicalID: "/jobs"},
	}, false, 0)
	view.Deletions(&buf, []operation.Deletion{{Stack: "Zones", LogicalID: "Zone", Type: "PowerDNS::DNS::Zone"}}, false, 0)
	view.Deletions(&buf, nil, false, 0)
	// At 50 columns, with colour: the row is cut to 50 visible columns, the escape codes kept whole.
	view.Deletions(&buf, []operation.Deletion{{Stack: "App", LogicalID: "HttpsSrvRecordSet75C9B2DE",
		Type: "PowerDNS::DNS::RecordSet", PhysicalID: "example.test./_https._tcp.example.test./SRV"}}, true, 50)
	golden.Assert(t, buf.String(), "TestDeletions.golden")
}
