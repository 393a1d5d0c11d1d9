// Package stateapi holds the wire types of the state service: the JSON bodies that cdkx server
// (internal/server) answers and that its client (pkg/backend/service) sends and reads, declared once for
// both sides.
//
// Types of the Pulumi Service API mirror github.com/pulumi/pulumi/sdk/v3/go/common/apitype field for
// field (same JSON names), so the Pulumi CLI can use the service; types of the cdkx extension
// (/api/cdkx/… and PATCH …/commit) say so in their doc comments.
package stateapi
