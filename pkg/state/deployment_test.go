package state

import (
	"strings"
	"testing"
)

func TestCheckMessage(t *testing.T) {
	tests := []struct {
		name, msg string
		wantErr   string
	}{
		{"empty", "", ""},
		{"short", "lower the TTL", ""},
		{"exactly 4 KiB", strings.Repeat("m", MaxMessageBytes), ""},
		{"4 KiB of multi-byte characters", strings.Repeat("é", MaxMessageBytes/2), ""},
		{"one byte over", strings.Repeat("m", MaxMessageBytes+1), "the message is 4097 bytes; at most 4096 (4 KiB) are allowed"},
		{"16 MB", strings.Repeat("m", 16<<20), "at most 4096 (4 KiB)"},
		{"not UTF-8", "bad \xff byte", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckMessage(tt.msg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckMessage(%d bytes) = %v, want nil", len(tt.msg), err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckMessage(%d bytes) = %v, want an error containing %q", len(tt.msg), err, tt.wantErr)
			}
		})
	}
}

func TestDeploymentFilterMatchIDPrefix(t *testing.T) {
	d := &Deployment{ID: "3f2a9c01-aaaa", Stack: "web", Status: StatusProposed}
	tests := []struct {
		f    DeploymentFilter
		want bool
	}{
		{DeploymentFilter{}, true},
		{DeploymentFilter{IDPrefix: "3f2a9c"}, true},
		{DeploymentFilter{IDPrefix: "3f2a9c01-aaaa"}, true},
		{DeploymentFilter{IDPrefix: "3f2a9d"}, false},
		{DeploymentFilter{IDPrefix: "3f2a9c01-aaaab"}, false},
		{DeploymentFilter{IDPrefix: "3f2a9c", Stack: "api"}, false},
	}
	for _, tt := range tests {
		if got := tt.f.Match(d); got != tt.want {
			t.Errorf("%+v.Match(%s) = %v, want %v", tt.f, d.ID, got, tt.want)
		}
	}
}

func TestDeploymentFilterMatch(t *testing.T) {
	d := Deployment{ID: "abcdef-1", Stack: "web", Kind: KindDeploy, Status: StatusCompleted, Seq: 7}
	tests := []struct {
		name string
		f    DeploymentFilter
		want bool
	}{
		{"zero", DeploymentFilter{}, true},
		{"kind", DeploymentFilter{Kinds: []DeploymentKind{KindDestroy, KindDeploy}}, true},
		{"other kind", DeploymentFilter{Kinds: []DeploymentKind{KindDestroy}}, false},
		{"before a newer one", DeploymentFilter{Before: 8}, true},
		{"before itself", DeploymentFilter{Before: 7}, false},
		{"everything", DeploymentFilter{Stack: "web", Statuses: []DeploymentStatus{StatusCompleted}, Kinds: []DeploymentKind{KindDeploy}, IDPrefix: "abc", Before: 9}, true},
	}
	for _, tt := range tests {
		if got := tt.f.Match(&d); got != tt.want {
			t.Errorf("%s: %+v.Match(seq 7) = %v, want %v", tt.name, tt.f, got, tt.want)
		}
	}
}

func TestNextBefore(t *testing.T) {
	page := []Deployment{{Seq: 9}, {Seq: 5}}
	tests := []struct {
		limit int
		want  int64
	}{{2, 5}, {3, 0}, {0, 0}}
	for _, tt := range tests {
		if got := NextBefore(page, tt.limit); got != tt.want {
			t.Errorf("NextBefore(seqs 9 5, %d) = %d, want %d", tt.limit, got, tt.want)
		}
	}
}
