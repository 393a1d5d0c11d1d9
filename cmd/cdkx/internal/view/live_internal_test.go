package view

import "testing"

func TestShorten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		n        int
		f        func(string, int) string
		want     string
	}{
		{"end fits", "CREATE_COMPLETE", 15, shortenEnd, "CREATE_COMPLETE"},
		{"end", "powerdns: 422: bad", 10, shortenEnd, "powerdns:…"},
		{"end zero", "abc", 0, shortenEnd, ""},
		{"name keeps its start", "ZonesRecordSetWithALongName1E6C2A94", 16, shortenName, "ZonesRecordSetW…"},
		{"name keeps the record number", "BulkRecord00187233625", 18, shortenName, "BulkRecord0018723…"},
		{"name fits", "Zone", 4, shortenName, "Zone"},
		{"path keeps both ends", "Zones/ZonesRecordSetWithALongName1E6C2A94", 20, shortenMiddle, "Zones/Zone…e1E6C2A94"},
		{"start keeps the record", "example.test./www.example.test./A", 20, shortenStart, "…www.example.test./A"},
		{"type drops the provider", "PowerDNS::DNS::RecordSet", 14, shortenType, "DNS::RecordSet"},
		{"type keeps the last segment", "PowerDNS::DNS::RecordSet", 10, shortenType, "RecordSet"},
		{"type then its end", "PowerDNS::DNS::RecordSet", 6, shortenType, "Recor…"},
		{"wide characters", "名前名前名前", 5, shortenEnd, "名前…"},
	} {
		if got := tc.f(tc.in, tc.n); got != tc.want || width(got) > tc.n {
			t.Errorf("%s: shorten(%q, %d) = %q (%d cells), want %q", tc.name, tc.in, tc.n, got, width(got), tc.want)
		}
	}
}

// TestNarrowType: a type column wider than its shortened types gives the cells to the logical IDs, up to
// their natural width, then to the detail (shown from liveDetailMin cells).
func TestNarrowType(t *testing.T) {
	t.Parallel()
	l := layout{stack: 5, typ: 22, id: 19, status: 18}
	if got, want := l.narrowType(14, 30, 80), (layout{stack: 5, typ: 14, id: 27, status: 18}); got != want {
		t.Errorf("narrowType(14, 30, 80) = %+v, want %+v", got, want)
	}
	if got, want := l.narrowType(9, 19, 81), (layout{stack: 5, typ: 9, id: 19, status: 18, detail: 12}); got != want {
		t.Errorf("narrowType(9, 19, 81) = %+v, want %+v", got, want)
	}
	if got := l.narrowType(30, 19, 80); got != l {
		t.Errorf("narrowType(30, …) = %+v, want it unchanged", got)
	}
}

func TestLayoutFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		width int
		in    layout
		want  layout
	}{
		// Room for everything: unchanged, the detail takes the rest.
		{120, layout{stack: 5, typ: 24, id: 19, status: 18}, layout{stack: 5, typ: 24, id: 19, status: 18, detail: 36}},
		// 80 columns: the names come first, the column furthest above its minimum giving way until they
		// fit; no room is left for a detail.
		{80, layout{stack: 5, typ: 24, id: 19, status: 18}, layout{stack: 5, typ: 22, id: 19, status: 18}},
		// 100 columns: the names fit, the detail gets the rest.
		{100, layout{stack: 5, typ: 24, id: 19, status: 18}, layout{stack: 5, typ: 24, id: 19, status: 18, detail: 16}},
		// Too narrow for the minimums: the names give way down to 3 cells.
		{64, layout{stack: 24, typ: 40, id: 48, status: 27}, layout{stack: 7, typ: 7, id: 7, status: 27}},
		{56, layout{stack: 24, typ: 40, id: 48, status: 27}, layout{stack: 4, typ: 4, id: 5, status: 27}},
		// Narrower still: the status column too.
		{40, layout{stack: 24, typ: 40, id: 48, status: 27}, layout{stack: 3, typ: 3, id: 3, status: 15}},
	} {
		got := tc.in.fit(tc.width)
		if got != tc.want {
			t.Errorf("%+v.fit(%d) = %+v, want %+v", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	t.Parallel()
	got := wrap("  UPDATE_FAILED A/B: ", "powerdns: PATCH http://127.0.0.1:18081/api/v1/servers/localhost/zones/x.: 422: bad", 40, "    ")
	want := "  UPDATE_FAILED A/B: powerdns: PATCH\n    http://127.0.0.1:18081/api/v1/server\n    s/localhost/zones/x.: 422: bad\n"
	if got != want {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

func TestListFit(t *testing.T) {
	t.Parallel()
	names := []string{"Alpha", "Beta", "Gamma", "Delta"}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{80, "Alpha, Beta, Gamma, Delta"},
		{25, "Alpha, Beta, … 2 more"},
		{8, "… 4 more"},
	} {
		if got := listFit(names, tc.w); got != tc.want {
			t.Errorf("listFit(%d) = %q, want %q", tc.w, got, tc.want)
		}
	}
}
