//go:build tools

package pulumicli

// The main packages the tests build (pulumiBinaries), imported here so that go.mod pins their versions.
import (
	_ "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
