package diag_test

import (
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

func TestNearestWithin(t *testing.T) {
	t.Parallel()
	types := []string{"PowerDNS::DNS::RecordSet", "PowerDNS::DNS::Zone"}
	tests := []struct {
		name  string
		edits int
		want  string
	}{
		{"PowerDNS::DNS::Widget", 2, ""},
		{"PowerDNS::DNS::Widget", 7, "PowerDNS::DNS::Zone"}, // what Nearest's bound for 21 characters allows
		{"PowerDNS::DNS::Zones", 2, "PowerDNS::DNS::Zone"},
		{"PowerDNS::DNS::RECORDSET", 0, "PowerDNS::DNS::RecordSet"}, // letter case needs no edit
	}
	for _, tt := range tests {
		if got := diag.NearestWithin(tt.name, types, tt.edits); got != tt.want {
			t.Errorf("NearestWithin(%q, %d) = %q, want %q", tt.name, tt.edits, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	ids := []string{"AppWwwRecordSet1E6C2A94", "AppApiRecordSet4A7D9B03", "Zone", "X"}
	types := []string{"PowerDNS::DNS::RecordSet", "PowerDNS::DNS::Zone", "Cdkx::Core::Data"}
	providers := []string{"cdkx", "hetzner", "powerdns", "rabbitmq"}
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"AppWwwRecordSet1E6C2A95", ids, "AppWwwRecordSet1E6C2A94"},
		{"AppWwwRecordSet", ids, ""}, // 8 edits, more than len/3
		{"Zon", ids, "Zone"},
		{"Zone", ids, ""}, // itself is no suggestion
		{"Network", ids, ""},
		{"X", ids, ""},
		{"Y", ids, ""},  // a single edit, but nothing of the name is kept
		{"x", ids, "X"}, // letter case alone is always suggested
		{"PowerDNS::DNS::Recordset", types, "PowerDNS::DNS::RecordSet"},
		{"POWERDNS::DNS::ZONE", types, "PowerDNS::DNS::Zone"}, // 9 edits, but only in case
		{"PowerDNS::DNS::Zones", types, "PowerDNS::DNS::Zone"},
		{"powerdsn", providers, "powerdns"},
		{"PowerDNS", providers, "powerdns"},
		{"hcloud", providers, ""}, // 5 edits from hetzner: a different name, not a typo
		{"rabbit", providers, "rabbitmq"},
		{"route53", providers, ""},
		{"pdns", providers, ""}, // 3 edits from cdkx: too many for 4 letters
		{"anything", nil, ""},
	}
	for _, tt := range tests {
		if got := diag.Nearest(tt.name, tt.candidates); got != tt.want {
			t.Errorf("Nearest(%q, %q) = %q, want %q", tt.name, tt.candidates, got, tt.want)
		}
	}
}
