package multipass

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/text"
)

// ErrDaemonDown is matched (errors.Is) by Preflight's error when `multipass version` answered without
// the daemon's version: multipassd is not running or does not answer.
var ErrDaemonDown = errors.New("the Multipass daemon (multipassd) does not answer")

// Preflight checks, before a run changes anything, that multipass runs and its daemon answers
// (`multipass version --format json`, once per Provider once it succeeded): a missing binary is a
// *MissingBinaryError naming MULTIPASS_BIN, a daemon that does not answer an error wrapping ErrDaemonDown;
// either stops the run (exit 1) before any change. Then, for each instance the plan launches, it reports
// what multipass launch would refuse on this machine: a mount source that does not exist or is not a
// folder (mounts[i].source), a network the host does not have (networks[i].name, from `multipass networks
// --format json`, called only when an instance names networks) and a cloud-init file that does not exist
// (cloudInit). Values not known yet, and relative paths into an asset of the assembly (the engine resolves
// and verifies those), are skipped.
func (p *Provider) Preflight(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	if err := p.checkVersion(ctx); err != nil {
		return nil, err
	}
	var problems []resource.PreflightProblem
	var hostNets map[string]bool
	var netsErr error
	for _, r := range req.Resources {
		if !r.Creates || r.Type != TypeInstance {
			continue
		}
		add := func(path, format string, args ...any) {
			problems = append(problems, resource.PreflightProblem{Stack: r.Stack, LogicalID: r.LogicalID,
				FieldError: resource.FieldError{Path: path, Message: fmt.Sprintf(format, args...)}})
		}
		if mounts, ok := r.Properties["mounts"].([]any); ok {
			for i, m := range mounts {
				obj, _ := m.(map[string]any)
				src, ok := obj["source"].(string)
				if !ok || src == "" || skipPath(src) {
					continue
				}
				switch fi, err := os.Stat(src); {
				case err != nil:
					add(fmt.Sprintf("mounts[%d].source", i), "%q does not exist on this machine (%s): create the folder, or correct the path", src, statReason(err))
				case !fi.IsDir():
					add(fmt.Sprintf("mounts[%d].source", i), "%q is not a folder: Multipass mounts folders only", src)
				}
			}
		}
		if nets, ok := r.Properties["networks"].([]any); ok {
			for i, n := range nets {
				obj, _ := n.(map[string]any)
				name, ok := obj["name"].(string)
				if !ok || name == "" || name == "bridged" { // "bridged" is local.bridged-network's interface
					continue
				}
				if hostNets == nil && netsErr == nil {
					hostNets, netsErr = p.networks(ctx)
					if netsErr != nil && !isCommandFailure(netsErr) {
						return nil, netsErr
					}
				}
				switch {
				case netsErr != nil:
					add(fmt.Sprintf("networks[%d].name", i), "this Multipass cannot list the host's networks, so launch would refuse network %q: %v", name, netsErr)
				case !hostNets[name]:
					add(fmt.Sprintf("networks[%d].name", i), "the host has no network %q; `multipass networks` lists %s", name, listNames(hostNets))
				}
			}
		}
		if ci, ok := r.Properties["cloudInit"].(string); ok && ci != "" && !IsInlineCloudInit(ci) && !skipPath(ci) {
			switch fi, err := os.Stat(ci); {
			case err != nil:
				add("cloudInit", "file %q does not exist on this machine (%s): correct the path, or write the user data inline (#cloud-config…)", ci, statReason(err))
			case fi.IsDir():
				add("cloudInit", "%q is a folder, not a cloud-init file", ci)
			}
		}
	}
	return problems, nil
}

// checkVersion runs `multipass version --format json` until it once shows a daemon that answers.
func (p *Provider) checkVersion(ctx context.Context) error {
	if p.versionOK.Load() {
		return nil
	}
	args := []string{"version", "--format", "json"}
	out, err := p.cli.run(ctx, nil, args...)
	if errors.As(err, new(*MissingBinaryError)) {
		return err
	}
	if err != nil {
		return fmt.Errorf("multipass: checking that Multipass runs: %w", err)
	}
	var v versionReply
	if err := decodeJSON(args, out, &v); err != nil {
		return fmt.Errorf("multipass: checking that Multipass runs: %w", err)
	}
	if v.Daemon == "" {
		return fmt.Errorf("multipass: %w (multipass %s answered alone); nothing was changed: start Multipass (Linux: `sudo snap start multipass`; macOS and Windows: open the Multipass app) and run again",
			ErrDaemonDown, text.Sanitize(text.Cap(v.Client, 64)))
	}
	p.versionOK.Store(true)
	return nil
}

// networks returns the names `multipass networks --format json` lists.
func (p *Provider) networks(ctx context.Context) (map[string]bool, error) {
	args := []string{"networks", "--format", "json"}
	out, err := p.cli.run(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	var reply networksReply
	if err := decodeJSON(args, out, &reply); err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(reply.List))
	for _, n := range reply.List {
		names[n.Name] = true
	}
	return names, nil
}

// isCommandFailure reports whether err is a command the daemon refused (the networks feature is not
// available with every driver), rather than one that could not run.
func isCommandFailure(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.ExitCode == ExitCommandFail
}

func listNames(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// assetSegmentRE matches a path segment that names an asset of the assembly (asset.<hash>).
var assetSegmentRE = regexp.MustCompile(`^asset\.[0-9a-fA-F]+$`)

// skipPath reports whether Preflight leaves a path alone: a relative path into an asset of the assembly
// (e.g. "assets/asset.bc66…/cloud-init.yaml"), which the engine turns into this run's copy, verified,
// before each call.
func skipPath(p string) bool {
	if filepath.IsAbs(p) {
		return false
	}
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if assetSegmentRE.MatchString(seg) {
			return true
		}
	}
	return false
}

// statReason is why os.Stat failed, without the path it already names.
func statReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
