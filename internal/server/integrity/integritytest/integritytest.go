// Package integritytest makes the deployment texts the tests of the integrity rules write: Pulumi
// checkpoints and cdkx documents of n resources, valid under the rules of package integrity.
package integritytest

import (
	"fmt"
	"strings"
)

// PulumiResource is resource i of a Pulumi checkpoint (URN …::r%03d, type t), extra appended to its
// fields (a JSON fragment starting with a comma, or "").
func PulumiResource(i int, extra string) string {
	return fmt.Sprintf(`{"urn":"urn:pulumi:dev::p::t::r%03d","custom":true,"type":"t","outputs":{"v":"%s"}%s}`, i, strings.Repeat("x", i%7), extra)
}

// CdkxResource is the resource of logical ID id of a cdkx document, extra appended to its fields.
func CdkxResource(id, extra string) string {
	return fmt.Sprintf(`{"urn":"urn:pulumi:dev::p::cdkx:Core:Data::%s","custom":true,"type":"cdkx:Core:Data","inputs":{},"outputs":{}%s,"cdkx":{"logicalId":"%s","type":"Cdkx::Core::Data","provider":"core","status":"CREATE_COMPLETE","updatedAt":"2026-01-02T03:04:05Z"}}`, id, extra, id)
}

// PulumiText is a Pulumi checkpoint (version 3) of n resources (PulumiResource 0 to n-1), on one line.
func PulumiText(n int) string {
	res := make([]string, n)
	for i := range res {
		res[i] = PulumiResource(i, "")
	}
	return `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":""},"resources":[` + strings.Join(res, ",") + `],"pending_operations":[],"metadata":{}}}`
}

// CdkxText is a cdkx document of n resources, one a line, of logical IDs r000, r002, r004….
func CdkxText(n int) string {
	var b strings.Builder
	b.WriteString(`{"version":3,"deployment":{"manifest":{"time":"0001-01-01T00:00:00Z","magic":"","version":"cdkx"},"cdkx":{"format":1,"stack":"dev","outputs":{},"updatedAt":"2026-01-02T03:04:05Z"},"resources":[`)
	for i := range n {
		b.WriteString(separatorOf(i))
		b.WriteString(CdkxResource(fmt.Sprintf("r%03d", i*2), ""))
	}
	b.WriteString("\n]}}")
	return b.String()
}

func separatorOf(i int) string {
	if i == 0 {
		return "\n"
	}
	return ",\n"
}
