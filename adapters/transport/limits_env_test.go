package transport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/transport"
)

func TestLimitsFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    transport.Limits
		wantErr string
	}{
		{name: "unset: the defaults", env: nil, want: transport.Limits{}},
		{name: "every variable", env: map[string]string{
			"CDKX_MAX_BODY_POWERDNS": "64MiB", "CDKX_CALL_TIMEOUT_POWERDNS": "10m",
			"CDKX_RESPONSE_TIMEOUT_POWERDNS": "2s", "CDKX_BODY_TIMEOUT_POWERDNS": "1500ms"},
			want: transport.Limits{MaxBody: 64 << 20, CallTimeout: 10 * time.Minute, ResponseTimeout: 2 * time.Second,
				BodyTimeout: 1500 * time.Millisecond}},
		{name: "bytes", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "1048576"}, want: transport.Limits{MaxBody: 1 << 20}},
		{name: "KiB", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "512KiB"}, want: transport.Limits{MaxBody: 512 << 10}},
		{name: "GiB", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "1GiB"}, want: transport.Limits{MaxBody: 1 << 30}},
		{name: "another provider's variable is not read", env: map[string]string{"CDKX_MAX_BODY_HETZNER": "1KiB"}, want: transport.Limits{}},
		{name: "a unit cdkx does not read", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "64MB"},
			wantErr: `CDKX_MAX_BODY_POWERDNS="64MB" is not a positive size like 1048576, 512KiB or 64MiB`},
		{name: "zero size", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "0"}, wantErr: "CDKX_MAX_BODY_POWERDNS"},
		{name: "overflow", env: map[string]string{"CDKX_MAX_BODY_POWERDNS": "9223372036854775807GiB"}, wantErr: "not a positive size"},
		{name: "negative duration", env: map[string]string{"CDKX_CALL_TIMEOUT_POWERDNS": "-1s"},
			wantErr: `CDKX_CALL_TIMEOUT_POWERDNS="-1s" is not a positive duration like 30s or 10m`},
		{name: "a duration without unit", env: map[string]string{"CDKX_BODY_TIMEOUT_POWERDNS": "60"}, wantErr: "CDKX_BODY_TIMEOUT_POWERDNS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := transport.LimitsFromEnv(func(k string) string { return tc.env[k] }, "powerdns")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LimitsFromEnv() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LimitsFromEnv() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
