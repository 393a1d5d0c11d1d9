// Package multipass is the cdkx provider "multipass": Ubuntu VMs on the developer's own machine,
// launched and deleted through the official `multipass` command (https://canonical.com/multipass), never
// its daemon's socket.
//
// One type, Multipass::Compute::Instance (schema.go), with the TypeScript cdkx's property names, so that
// its assemblies deploy unchanged. Commands (each an exec of the binary, see Exec): `version --format
// json` (Preflight), `launch` (Create), `info NAME --format json` (Read, Locate, and the wait after a
// launch), `networks --format json` (Preflight of instances with networks) and `delete --purge NAME`
// (Delete). Formats, messages and exit codes are those of canonical/multipass (src/client/cli/cmd/*.cpp,
// src/client/cli/formatter/json_formatter.cpp, src/daemon/daemon.cpp).
//
// What the adapter does beyond the TypeScript runtime:
//   - Create waits until the instance is Running with an IPv4 address (its timeout, default 300 s), so
//     that ipAddress is known to whatever reads it (a Hetzner firewall that admits the VM).
//   - Locate finds the instance of an interrupted launch by its name: crash recovery never launches twice.
//   - A launch that failed but left an instance (a mount that failed after the VM started, a timeout)
//     names it, so that state keeps it for deletion.
//   - Info declares 2 launches at a time (a developer's machine), and Preflight stops a run before any
//     change when multipass is missing or its daemon does not answer, or when a mount source, a network
//     or a cloud-init file does not exist on this machine.
//
// Configuration: MULTIPASS_BIN (default "multipass", found on PATH).
package multipass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Name is the provider's name as written in templates.
const Name = "multipass"

// EnvBin is the environment variable NewFromEnv reads: the multipass binary, a path or a name looked up
// on PATH.
const EnvBin = "MULTIPASS_BIN"

// DefaultBin is the binary used when Config.Bin is empty: multipass on PATH.
const DefaultBin = "multipass"

// DefaultConcurrency is how many calls cdkx makes at once by default: each launch is a VM booting on the
// developer's machine, and Multipass itself downloads an image once for all of them.
const DefaultConcurrency = 2

// DefaultTimeout is how long a launch may take, until the instance runs with an IPv4 address, when the
// instance's timeout property is absent (Multipass's own default_timeout).
const DefaultTimeout = 300 * time.Second

// DefaultPollInterval is how often Create asks `multipass info` whether the launched instance runs yet.
const DefaultPollInterval = time.Second

// Config configures a Provider.
type Config struct {
	// Bin is the multipass binary: a path, or a name looked up on PATH; empty means DefaultBin.
	Bin string
	// PollInterval is the pause between two `info` calls while waiting for an instance to run; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Exec runs one command; nil means Exec (os/exec). Tests supply a fake.
	Exec ExecFunc
}

// Provider serves Multipass::Compute::Instance. It is safe for concurrent use. Constructing one runs
// nothing, so a CLI can build it only when an assembly needs it.
type Provider struct {
	// Dispatch serves Create, Read, Update, Delete and Locate through types.
	kit.Dispatch[*Provider]
	cli  runner
	poll time.Duration
	// versionOK is set once `multipass version` showed a daemon that answers.
	versionOK atomic.Bool
}

// NewFromEnv builds a Provider whose binary is MULTIPASS_BIN (read through getenv, os.Getenv in the
// CLI), or multipass on PATH when it is unset. It never fails: a missing binary is reported by Preflight.
func NewFromEnv(getenv func(string) string) (*Provider, error) {
	return New(Config{Bin: getenv(EnvBin)})
}

// New builds a Provider from cfg.
func New(cfg Config) (*Provider, error) {
	bin := cfg.Bin
	if bin == "" {
		bin = DefaultBin
	}
	run := cfg.Exec
	if run == nil {
		run = Exec
	}
	poll := cfg.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	p := &Provider{cli: runner{bin: bin, exec: run}, poll: poll}
	p.Dispatch = types.For(p)
	return p, nil
}

// Info declares the provider "multipass", its type, a default limit of DefaultConcurrency calls at once,
// and that it can locate the instance of an interrupted launch (by its name). It is the same for a zero
// Provider, so the CLI can describe Multipass before it is configured.
func (p *Provider) Info() resource.ProviderInfo { return types.Info() }

// types is the provider's one type; the Provider's Create (createInstance), Read (readInstance), Delete
// (deleteInstance) and Locate (locateInstance) go through it (kit.Dispatch). Every property is
// create-only, so Update is never called, and answers an error naming the changed properties.
var types = kit.New(resource.ProviderInfo{Name: Name, DefaultConcurrency: DefaultConcurrency, CanLocate: true},
	kit.Type[*Provider]{Schema: instanceSchema,
		Create: (*Provider).createInstance, Read: (*Provider).readInstance, Delete: (*Provider).deleteInstance,
		Locate: (*Provider).locateInstance})

// instanceProps are an instance's properties as the template writes them.
type instanceProps struct {
	Name      string    `json:"name"`
	Image     string    `json:"image"`
	CPUs      *int64    `json:"cpus"`
	Memory    string    `json:"memory"`
	Disk      string    `json:"disk"`
	Bridged   bool      `json:"bridged"`
	Timeout   *int64    `json:"timeout"`
	Networks  []network `json:"networks"`
	Mounts    []mount   `json:"mounts"`
	CloudInit string    `json:"cloudInit"`
}

type network struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	MAC  string `json:"mac"`
}

type mount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

func decodeProps(props resource.Properties) (instanceProps, error) {
	var p instanceProps
	if err := resource.Decode(props, &p); err != nil {
		return p, fmt.Errorf("multipass: %s properties: %w", TypeInstance, err)
	}
	if p.Name == "" {
		return p, fmt.Errorf("multipass: %s has no name", TypeInstance)
	}
	return p, nil
}

// timeout is how long the instance's launch may take.
func (ip instanceProps) timeout() time.Duration {
	if ip.Timeout != nil && *ip.Timeout > 0 {
		return time.Duration(*ip.Timeout) * time.Second
	}
	return DefaultTimeout
}

// IsInlineCloudInit reports whether a cloudInit value is user data itself rather than a file's path: it
// starts with "#" (#cloud-config, #!/bin/sh, #include…) or holds a line break.
func IsInlineCloudInit(s string) bool {
	return strings.HasPrefix(s, "#") || strings.ContainsAny(s, "\n\r")
}

// launchArgs returns the arguments of `multipass launch` for ip and what it reads on stdin (inline user
// data, with --cloud-init -), in the order of launch.cpp's options, the image last:
// launch --name N [--cpus C] [--memory M] [--disk D] [--bridged] [--timeout S] [--cloud-init PATH|-]
// [--network name=X[,mode=Y][,mac=Z]]… [--mount SRC[:TGT]]… [IMAGE].
func launchArgs(ip instanceProps) (args []string, stdin []byte) {
	args = []string{"launch", "--name", ip.Name}
	if ip.CPUs != nil {
		args = append(args, "--cpus", fmt.Sprint(*ip.CPUs))
	}
	if ip.Memory != "" {
		args = append(args, "--memory", ip.Memory)
	}
	if ip.Disk != "" {
		args = append(args, "--disk", ip.Disk)
	}
	if ip.Bridged {
		args = append(args, "--bridged")
	}
	if ip.Timeout != nil {
		args = append(args, "--timeout", fmt.Sprint(*ip.Timeout))
	}
	switch {
	case ip.CloudInit == "":
	case IsInlineCloudInit(ip.CloudInit):
		args, stdin = append(args, "--cloud-init", "-"), []byte(ip.CloudInit)
	default:
		args = append(args, "--cloud-init", ip.CloudInit)
	}
	for _, n := range ip.Networks {
		spec := "name=" + n.Name
		if n.Mode != "" {
			spec += ",mode=" + n.Mode
		}
		if n.MAC != "" {
			spec += ",mac=" + n.MAC
		}
		args = append(args, "--network", spec)
	}
	for _, m := range ip.Mounts {
		spec := m.Source
		if m.Target != "" {
			spec += ":" + m.Target
		}
		args = append(args, "--mount", spec)
	}
	if ip.Image != "" {
		args = append(args, ip.Image)
	}
	return args, stdin
}

// outputs are the instance's outputs: name, ipAddress, sshUser and crn.
func outputs(name, ip string) resource.Properties {
	return resource.Properties{"name": name, "ipAddress": ip, "sshUser": SSHUser, "crn": resource.CRN(TypeInstance, name)}
}

// createInstance launches the instance (`multipass launch`, launchArgs) and waits until it is Running with an
// IPv4 address, polling `info` every PollInterval for at most its timeout (DefaultTimeout) from the start
// of the launch. A name that is taken gives an error wrapping resource.ErrAlreadyExists (an instance
// deleted but not purged takes its name too). When the launch or the wait failed but the instance exists,
// the error comes with a result naming it, so that state keeps it for deletion. When ctx ends during the
// launch, the error wraps resource.ErrOutcomeUnknown: the daemon may go on launching.
func (p *Provider) createInstance(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	ip, err := decodeProps(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	deadline := time.Now().Add(ip.timeout())
	args, stdin := launchArgs(ip)
	made := resource.CreateResult{PhysicalID: ip.Name, Outputs: outputs(ip.Name, "")}
	// An interrupt of the run (Ctrl-C, an abort) stops the launching client with SIGINT and the wait;
	// the daemon goes on launching, and the engine leaves the create pending for the next deploy to find.
	ctx, stop := interruptible(ctx)
	defer stop()
	if _, err := p.cli.run(ctx, stdin, args...); err != nil {
		switch {
		case ctx.Err() != nil:
			return resource.CreateResult{}, fmt.Errorf("multipass: launch of %s was interrupted; the daemon may go on launching it (%w): %w",
				ip.Name, resource.ErrOutcomeUnknown, context.Cause(ctx))
		case errors.Is(err, resource.ErrAlreadyExists):
			return resource.CreateResult{}, fmt.Errorf("multipass: an instance named %s exists already, not made by this deployment (a deleted one keeps its name until `multipass purge`): rename the resource, or delete the instance and run again: %w",
				ip.Name, err)
		case errors.Is(err, resource.ErrUnreachable), errors.As(err, new(*MissingBinaryError)):
			return resource.CreateResult{}, err
		}
		// Did the launch leave an instance? (launch mounts after the VM started; a timeout leaves it.)
		if _, ierr := p.info(ctx, ip.Name); errors.Is(ierr, resource.ErrNotFound) {
			return resource.CreateResult{}, err
		}
		return made, err
	}
	inst, err := p.waitRunning(ctx, ip.Name, deadline)
	if err != nil {
		if errors.Is(context.Cause(ctx), resource.ErrInterrupted) {
			// Not recorded as made (then to be deleted): the engine locates it, and leaves it pending.
			return resource.CreateResult{}, fmt.Errorf("multipass: %s was launched, but the wait for it to run was interrupted (%w): %w",
				ip.Name, resource.ErrOutcomeUnknown, context.Cause(ctx))
		}
		return made, err
	}
	return resource.CreateResult{PhysicalID: ip.Name, Outputs: outputs(ip.Name, inst.ipAddress())}, nil
}

// interruptible returns a context that ends with ctx, or with resource.ErrInterrupted as its cause once
// the run making the call is interrupted (resource.Interrupted); stop releases it.
func interruptible(ctx context.Context) (ictx context.Context, stop func()) {
	interrupted := resource.Interrupted(ctx)
	if interrupted == nil {
		return ctx, func() {}
	}
	ictx, cancel := context.WithCancelCause(ctx)
	select {
	case <-interrupted:
		cancel(resource.ErrInterrupted)
		return ictx, func() {}
	default:
	}
	go func() {
		select {
		case <-interrupted:
			cancel(resource.ErrInterrupted)
		case <-ictx.Done():
		}
	}()
	return ictx, func() { cancel(nil) }
}

// waitRunning polls `info` until the instance is Running with an IPv4 address, at once and then every
// poll interval, until deadline (at least once) or ctx's end.
func (p *Provider) waitRunning(ctx context.Context, name string, deadline time.Time) (instanceInfo, error) {
	for {
		if ctx.Err() != nil {
			return instanceInfo{}, fmt.Errorf("multipass: waiting for %s to run: %w", name, ctx.Err())
		}
		inst, err := p.info(ctx, name)
		switch {
		case err != nil:
			return inst, fmt.Errorf("multipass: waiting for %s to run: %w", name, err)
		case inst.State == StateRunning && inst.ipAddress() != "":
			return inst, nil
		}
		wait := p.poll
		left := time.Until(deadline)
		if left <= 0 {
			return inst, fmt.Errorf("multipass: instance %s is not Running with an IPv4 address after its timeout (state %q, addresses %q): raise its timeout, or check it with `multipass info %s`",
				name, inst.State, inst.IPv4, name)
		}
		wait = min(wait, left)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return inst, fmt.Errorf("multipass: waiting for %s to run: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

// info runs `multipass info NAME --format json` and returns the instance, or an error wrapping
// resource.ErrNotFound when it does not exist or was deleted (state Deleted, not purged yet).
func (p *Provider) info(ctx context.Context, name string) (instanceInfo, error) {
	args := []string{"info", name, "--format", "json"}
	out, err := p.cli.run(ctx, nil, args...)
	if err != nil {
		return instanceInfo{}, err
	}
	var reply infoReply
	if err := decodeJSON(args, out, &reply); err != nil {
		return instanceInfo{}, err
	}
	inst, ok := reply.Info[name]
	if !ok {
		return instanceInfo{}, fmt.Errorf("multipass: %s does not list instance %s: %w", commandLine(args), name, resource.ErrNotFound)
	}
	if inst.State == StateDeleted {
		return instanceInfo{}, fmt.Errorf("multipass: instance %s was deleted (not purged yet): %w", name, resource.ErrNotFound)
	}
	return inst, nil
}

// readInstance returns the instance's properties and outputs from `multipass info`, or an error wrapping
// resource.ErrNotFound when it does not exist or was deleted. Multipass does not report most inputs as
// they were written (sizes in other units, no image alias, no cloud-init), so the properties are the
// recorded ones. ipAddress is the live first IPv4 address; an instance without one (stopped) keeps the
// recorded address.
func (p *Provider) readInstance(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	inst, err := p.info(ctx, req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props, _ := resource.Clone(req.Properties).(map[string]any)
	if props == nil {
		props = resource.Properties{}
	}
	props["name"] = req.PhysicalID
	addr := inst.ipAddress()
	if recorded, ok := req.Outputs["ipAddress"].(string); ok && addr == "" {
		addr = recorded
	}
	return resource.ReadResult{Properties: props, Outputs: outputs(req.PhysicalID, addr)}, nil
}

// deleteInstance deletes and purges the instance (`multipass delete --purge NAME`). An instance already gone is
// success.
func (p *Provider) deleteInstance(ctx context.Context, req resource.DeleteRequest) error {
	_, err := p.cli.run(ctx, nil, "delete", "--purge", req.PhysicalID)
	if errors.Is(err, resource.ErrNotFound) {
		return nil
	}
	return err
}

// locateInstance returns the name of the instance a create with req.Properties launches, when `multipass info`
// shows it (not deleted), or an error wrapping resource.ErrNotFound. An instance still starting (the
// launch was interrupted, the daemon goes on) is waited for, as Create would, so that the outputs read
// next carry its address; one that does not run within its timeout is returned all the same.
func (p *Provider) locateInstance(ctx context.Context, req resource.CreateRequest) (string, error) {
	ip, err := decodeProps(req.Properties)
	if err != nil {
		return "", err
	}
	inst, err := p.info(ctx, ip.Name)
	if err != nil {
		return "", fmt.Errorf("locate %s %s: %w", req.Type, ip.Name, err)
	}
	if inst.State == StateStarting || inst.State == StateRestarting {
		wctx, stop := interruptible(ctx)
		defer stop()
		_, _ = p.waitRunning(wctx, ip.Name, time.Now().Add(ip.timeout()))
		if errors.Is(context.Cause(wctx), resource.ErrInterrupted) {
			// Found but not running yet, in an interrupted run: the next deploy finds it again.
			return "", fmt.Errorf("locate %s %s: the instance is still %s: %w", req.Type, ip.Name, inst.State, resource.ErrInterrupted)
		}
	}
	return ip.Name, nil
}
