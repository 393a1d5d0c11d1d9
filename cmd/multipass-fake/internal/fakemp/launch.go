package fakemp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// launchOptions are `multipass launch`'s options (src/client/cli/cmd/launch.cpp, Launch::parse_args;
// --timeout from add_timeout in common_cli.cpp).
var launchOptions = []option{
	{long: "cpus", short: "c", takesValue: true},
	{long: "disk", short: "d", takesValue: true},
	{long: "memory", short: "m", takesValue: true},
	{long: "mem", takesValue: true},
	{long: "name", short: "n", takesValue: true},
	{long: "cloud-init", takesValue: true},
	{long: "network", takesValue: true},
	{long: "bridged"},
	{long: "mount", takesValue: true},
	{long: "timeout", takesValue: true},
}

// Sizes and limits of Multipass (include/multipass/constants.h).
const (
	defaultMemory = 1 << 30
	defaultDisk   = 5 << 30
	minMemory     = 128 << 20
	minDisk       = 512 << 20
	bridgedName   = "bridged"
)

// image is what the fake knows of an Ubuntu image: info's image_release and release.
type image struct {
	codename, version, imageRelease, release string
}

var (
	noble    = image{"noble", "24.04", "24.04 LTS", "Ubuntu 24.04.3 LTS"}
	jammy    = image{"jammy", "22.04", "22.04 LTS", "Ubuntu 22.04.5 LTS"}
	focal    = image{"focal", "20.04", "20.04 LTS", "Ubuntu 20.04.6 LTS"}
	plucky   = image{"plucky", "25.04", "25.04", "Ubuntu 25.04"}
	questing = image{"questing", "25.10", "25.10", "Ubuntu 25.10"}
	// images are the aliases the fake resolves; the default (no image argument) is the latest LTS.
	images = map[string]image{
		"": noble, "lts": noble, "noble": noble, "24.04": noble,
		"jammy": jammy, "22.04": jammy, "focal": focal, "20.04": focal,
		"plucky": plucky, "25.04": plucky, "questing": questing, "25.10": questing,
	}
	// blueprints are the (deprecated) blueprints the fake knows, and the image each is built on.
	blueprints = map[string]image{"docker": noble}
)

// blueprintWarning is the log line Daemon::create_vm sends for a blueprint (src/daemon/daemon.cpp); the
// client prints it on stderr.
const blueprintWarning = "*** Warning! Blueprints are deprecated and will be removed in a future release. ***\n\n" +
	"You can achieve similar results with cloud-init and other launch options.\n" +
	"Run `multipass help launch` for more info, or find out more at:\n" +
	"- https://documentation.ubuntu.com/multipass/en/latest/how-to-guides/manage-instances/launch-customized-instances-with-multipass-and-cloud-init/\n" +
	"- https://cloudinit.readthedocs.io\n\n"

// launchRequest is what the client part of `launch` sends to the daemon after checking its arguments.
type launchRequest struct {
	remote, image   string
	name            string
	cpus            int
	memory, disk    string // as given ("" when absent)
	memBytes        int64
	diskBytes       int64
	networks        []Network
	mounts          [][2]string // source and target as given
	cloudInit       string
	timeout         int // seconds, 0 when absent
	start, deadline time.Time
}

// validationError is mp::ValidationException: launch prints "error: <text>" and exits 1.
type validationError string

func (e validationError) Error() string { return string(e) }

var macAddress = regexp.MustCompile(`^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$`)

// netDigest parses one --network spec as net_digest does (src/client/cli/cmd/launch.cpp):
// "key=value,…" with keys name, mode (auto|manual, default auto) and mac, or a bare "NAME".
func netDigest(spec string) (Network, error) {
	n := Network{Mode: "auto"}
	parts := splitSkipEmpty(spec, ",")
	for _, kv := range parts {
		f := splitSkipEmpty(kv, "=")
		switch {
		case len(f) == 2:
			key, val := strings.ToLower(f[0]), f[1]
			switch key {
			case "name":
				n.Name = val
			case "mode":
				m := strings.ToLower(val)
				if m != "auto" && m != "manual" {
					return n, validationError(fmt.Sprintf("Bad network mode '%s', need 'auto' or 'manual'", m))
				}
				n.Mode = m
			case "mac":
				if !macAddress.MatchString(val) {
					return n, validationError("Invalid MAC address: " + val)
				}
				n.MAC = val
			default:
				return n, validationError("Bad network field: " + key)
			}
		case len(f) == 1 && len(parts) == 1:
			n.Name = f[0]
		default:
			return n, validationError("Bad network field definition: " + kv)
		}
	}
	if n.Name == "" {
		return n, validationError("Bad network definition, need at least a 'name' field")
	}
	return n, nil
}

// splitSkipEmpty is QString::split with Qt::SkipEmptyParts.
func splitSkipEmpty(s, sep string) []string {
	var out []string
	for _, f := range strings.Split(s, sep) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// windowsDrive matches a source like C:\dir, whose first colon is not the source/target separator.
var windowsDrive = regexp.MustCompile(`^[A-Za-z]:[\\/].*`)

// splitMount splits a --mount value into source and target as Launch::parse_args does.
func splitMount(v string) (string, string) {
	if windowsDrive.MatchString(v) {
		parts := strings.SplitN(v, ":", 3)
		if len(parts) == 3 {
			return parts[0] + ":" + parts[1], parts[2]
		}
		return v, ""
	}
	src, tgt, _ := strings.Cut(v, ":")
	return src, tgt
}

// clientLogError prints an exception that escaped the client, as top_catch_all and StandardLogger do
// (include/multipass/top_catch_all.h, src/logging/standard_logger.cpp); multipass then exits 1.
func (inv *invocation) clientLogError(err error) int {
	ts := inv.env.now().Format("2006-01-02T15:04:05.000")
	fmt.Fprintf(inv.stderr, "[%s] [error] [client] Caught an unhandled exception: %v\n", ts, err)
	return ExitCommandLine
}

// parseLaunch checks launch's arguments in the order Launch::parse_args does, printing the real
// messages; ok is false when it refused them (exit code 1).
func (inv *invocation) parseLaunch(p parsedArgs) (req launchRequest, code int, ok bool) {
	req.start = inv.env.now()
	req.cpus = 1
	req.memBytes = defaultMemory
	req.diskBytes = defaultDisk
	refuse := func(format string, a ...any) (launchRequest, int, bool) {
		fmt.Fprintf(inv.stderr, format, a...)
		return req, ExitCommandLine, false
	}
	if len(p.positional) > 1 {
		return refuse("Too many arguments supplied\n")
	}
	if len(p.positional) == 1 {
		img := p.positional[0]
		switch {
		case strings.HasPrefix(img, "file://"):
			abs, err := filepath.Abs(strings.TrimPrefix(img, "file://"))
			if err != nil {
				abs = strings.TrimPrefix(img, "file://")
			}
			req.image = "file://" + abs
		case strings.HasPrefix(img, "http://"), strings.HasPrefix(img, "https://"):
			req.image = img
		default:
			switch strings.Count(img, ":") {
			case 0:
				req.image = img
			case 1:
				req.remote, req.image, _ = strings.Cut(img, ":")
			default:
				return refuse("Invalid remote and source image name supplied\n")
			}
		}
	}
	req.name = p.value("name")
	if p.isSet("cpus") {
		text := p.value("cpus")
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil || n < 1 {
			return refuse("Error: invalid CPU count '%s', need a positive integer value.\n", text)
		}
		req.cpus = n
	}
	if p.isSet("memory") && p.isSet("mem") {
		return refuse("Error: invalid option(s) used for memory allocation. Please use \"--memory\" to specify amount of memory to allocate.\n")
	}
	if p.isSet("memory") || p.isSet("mem") {
		req.memory = p.value("memory") + p.value("mem")
		b, err := parseMemorySize(req.memory)
		if err != nil {
			return req, inv.clientLogError(err), false
		}
		req.memBytes = b
	}
	if p.isSet("disk") {
		req.disk = p.value("disk")
		b, err := parseMemorySize(req.disk)
		if err != nil {
			return req, inv.clientLogError(err), false
		}
		req.diskBytes = b
	}
	for _, v := range p.values["mount"] {
		src, tgt := splitMount(v)
		fi, err := os.Stat(src)
		switch {
		case err != nil:
			return refuse("Mount source path \"%s\" does not exist\n", src)
		case !fi.IsDir():
			return refuse("Mount source path \"%s\" is not a directory\n", src)
		}
		d, err := os.Open(src)
		if err != nil {
			return refuse("Mount source path \"%s\" is not readable\n", src)
		}
		d.Close()
		req.mounts = append(req.mounts, [2]string{src, tgt})
	}
	if p.isSet("cloud-init") {
		file := p.value("cloud-init")
		badFile := func() (launchRequest, int, bool) {
			return refuse("Could not load cloud-init configuration: bad file: %s\nPlease ensure that Multipass can read it.\n", file)
		}
		switch {
		case file == "-":
			s, err := inv.readStdin()
			if err != nil {
				return refuse("Could not load cloud-init configuration: %v\n", err)
			}
			req.cloudInit = s
		case strings.HasPrefix(file, "http://"), strings.HasPrefix(file, "https://"):
			// The real client downloads the URL; the fake records it without going online.
			req.cloudInit = file
		default:
			fi, err := os.Stat(file)
			if err != nil || (!fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0) {
				return badFile()
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return badFile()
			}
			req.cloudInit = string(b)
		}
	}
	var specs []string
	if p.isSet("bridged") {
		specs = append(specs, bridgedName)
	}
	specs = append(specs, p.values["network"]...)
	for _, s := range specs {
		n, err := netDigest(s)
		if err != nil {
			return refuse("error: %v\n", err)
		}
		req.networks = append(req.networks, n)
	}
	if p.isSet("timeout") {
		t, err := strconv.Atoi(strings.TrimSpace(p.value("timeout")))
		if err != nil || t <= 0 {
			return refuse("error: --timeout value has to be a positive integer\n")
		}
		req.timeout = t
	}
	return req, ExitOK, true
}

// runLaunch answers `multipass launch` (src/client/cli/cmd/launch.cpp; the daemon's side in
// Daemon::create_vm and validate_create_arguments, src/daemon/daemon.cpp).
//
// The client checks come first (exit 1): argument count, image name, --cpus ≥ 1, --memory/--disk sizes
// (a malformed one escapes as a logged exception), mount sources (exist, are folders, readable),
// --cloud-init (a readable file or fifo, "-" for stdin, or a URL), --network specs and --timeout. Then
// the daemon (exit 2, "launch failed: …"): when it does not answer, "cannot connect to the multipass
// socket"; an unknown image or remote; "Invalid arguments supplied" with the last of: memory below 128M,
// disk below 512M, a name that is not a hostname, a network the host does not have; an existing name
// (deleted ones too, until purged); a launch named in MULTIPASS_FAKE_FAIL_LAUNCH fails as a failed image
// download, leaving no instance. Otherwise the instance is recorded at once as Starting, Running after
// MULTIPASS_FAKE_LAUNCH_SECONDS; the client waits for that (or exits 5 with "Timed out waiting for
// instance launch." when --timeout runs out first; the instance still becomes Running), prints
// "Launched: NAME", then mounts each --mount as `multipass mount` would (an invalid target is a mount
// failure, exit 2, the instance stays) and prints "Mounted 'SRC' into 'NAME:TARGET'". Its stdout also
// carries the spinner's line-clearing escapes (see spinner), as the real one's does once the daemon is
// asked, even on a refusal: readers must look for "Launched: NAME" among them.
func runLaunch(inv *invocation, p parsedArgs) int {
	req, code, ok := inv.parseLaunch(p)
	inv.log()
	if !ok {
		return code
	}
	if req.timeout > 0 {
		req.deadline = req.start.Add(time.Duration(req.timeout) * time.Second)
	}
	sp := &spinner{w: inv.stdout}
	timedOut := false
	// Launch's spinner is destroyed when multipass exits, which clears the line once more; only the
	// timeout, which exits at once (MP_UTILS.exit), skips that.
	defer func() {
		if !timedOut {
			fmt.Fprint(inv.stdout, clearLine)
		}
	}()
	if code, down := inv.daemonDown("launch"); down {
		sp.stop()
		return code
	}
	var inst Instance
	var warning string
	code, ok = inv.update("launch", func(s *store) (bool, error) {
		var err error
		inst, warning, err = inv.createInstance(s, req)
		if err != nil {
			return false, err
		}
		s.Instances[inst.Name] = &inst
		return true, nil
	})
	if warning != "" {
		sp.stop() // AnimatedSpinner::print
		fmt.Fprint(inv.stderr, warning)
	}
	if !ok {
		sp.stop()
		return code
	}
	for _, msg := range []string{"Creating " + inst.Name, "Configuring " + inst.Name, "Starting " + inst.Name,
		"Waiting for initialization to complete"} {
		sp.stop()
		sp.start(msg)
	}
	err := inv.waitUntil(inst.ReadyAt, req.deadline)
	sp.stop()
	if err != nil {
		if errors.Is(err, errTimedOut) {
			timedOut = true
			fmt.Fprint(inv.stderr, "Timed out waiting for instance launch.\n")
			return ExitTimeout
		}
		return inv.fail("launch", err.Error(), "")
	}
	stillThere := false
	if c, ok := inv.readOnly("launch", func(s *store) error {
		in, found := s.Instances[inst.Name]
		stillThere = found && !in.Deleted
		return nil
	}); !ok {
		return c
	}
	if !stillThere {
		// Deleted by another client while launching: the fake's choice of message (the real daemon's
		// answer to that race was not found).
		return inv.fail("launch", fmt.Sprintf("instance \"%s\" does not exist", inst.Name), "")
	}
	fmt.Fprintf(inv.stdout, "Launched: %s\n", inst.Name)
	ret := ExitOK
	for _, m := range req.mounts {
		if r := inv.mount(inst.Name, m[0], m[1]); ret == ExitOK {
			ret = r
		}
	}
	return ret
}

var errTimedOut = errors.New("timed out")

// spinner writes what multipass's AnimatedSpinner writes to stdout while a launch goes on
// (src/client/cli/cmd/animated_spinner.cpp), whether stdout is a terminal or not: each message of the
// daemon (Daemon::create_vm: "Creating NAME", "Configuring NAME", "Starting NAME", "Waiting for
// initialization to complete") after escape sequences that clear the line, and a spinning character
// drawn with a backspace. The real spinner redraws that character every 100ms; the fake draws it once,
// so its output does not depend on timing. Readers of launch's stdout must expect these bytes before
// "Launched: NAME".
type spinner struct {
	w       io.Writer
	running bool
}

const clearLine = "\x1b[2K\x1b[0A\x1b[0E"

func (s *spinner) start(msg string) {
	if s.running {
		return
	}
	s.running = true
	fmt.Fprint(s.w, clearLine+msg+"  \b/")
}

func (s *spinner) stop() {
	if s.running {
		s.running = false
		fmt.Fprint(s.w, "\b ")
	}
	fmt.Fprint(s.w, clearLine)
}

// waitUntil waits until ready, or returns errTimedOut at deadline (if not zero) when that comes first, or
// the context's error.
func (inv *invocation) waitUntil(ready, deadline time.Time) error {
	until, err := ready, error(nil)
	if !deadline.IsZero() && deadline.Before(ready) {
		until, err = deadline, errTimedOut
	}
	d := until.Sub(inv.env.now())
	if d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return err
	case <-inv.ctx.Done():
		return inv.ctx.Err()
	}
}

// createInstance is the daemon's side of a launch: it checks req against the state and returns the
// instance to record, or the daemon's refusal. warning is a log line the daemon sends (blueprints).
func (inv *invocation) createInstance(s *store, req launchRequest) (Instance, string, error) {
	var in Instance
	img, warning, err := resolveImage(req.remote, req.image)
	if err != nil {
		return in, "", err
	}
	details := ""
	if req.memBytes < minMemory {
		details = fmt.Sprintf("Invalid memory size value supplied: %s.", req.memory)
	}
	if req.disk != "" && req.diskBytes < minDisk {
		details = fmt.Sprintf("Invalid disk size value supplied: %s.", req.disk)
	}
	if req.name != "" && !validHostname(req.name) {
		details = "Invalid instance name supplied: " + req.name
	}
	nets := make([]Network, 0, len(req.networks))
	for _, n := range req.networks {
		if n.Name == bridgedName {
			if len(inv.env.Networks) == 0 {
				return in, warning, daemonError{message: "You have to `multipass set local.bridged-network=<name>` to use the \"bridged\" shortcut."}
			}
			n.Name = inv.env.Networks[0]
		}
		if !contains(inv.env.Networks, n.Name) {
			details = "Invalid network options supplied"
		}
		n.MAC = strings.ToLower(n.MAC)
		nets = append(nets, n)
	}
	if details != "" {
		return in, warning, daemonError{message: "Invalid arguments supplied", details: details}
	}
	name := req.name
	if name == "" {
		name = petName(s)
	}
	if _, exists := s.Instances[name]; exists {
		return in, warning, daemonError{message: fmt.Sprintf("instance \"%s\" already exists", name)}
	}
	if inv.env.failsLaunch(name) {
		return in, warning, daemonError{message: fmt.Sprintf(
			"failed to download from 'https://cloud-images.ubuntu.com/releases/%s/release/ubuntu-%s-server-cloudimg-amd64.img': Network timeout",
			img.codename, img.version)}
	}
	sum := sha256.Sum256([]byte("ubuntu-" + img.version + "-server-cloudimg-amd64.img"))
	now := inv.env.now()
	in = Instance{
		Name:         name,
		Image:        joinImage(req.remote, req.image),
		ImageRelease: img.imageRelease,
		Release:      img.release,
		ImageHash:    hex.EncodeToString(sum[:]),
		CPUs:         req.cpus,
		MemoryBytes:  req.memBytes,
		DiskBytes:    req.diskBytes,
		Networks:     nets,
		CloudInit:    req.cloudInit,
		IPv4:         s.allocateIPv4(name),
		LaunchedAt:   now,
		ReadyAt:      now.Add(inv.env.LaunchDuration),
	}
	if strings.Contains(req.image, "://") {
		in.ImageRelease = "" // a custom image: list shows "Not Available"
	}
	return in, warning, nil
}

func joinImage(remote, image string) string {
	if remote != "" {
		return remote + ":" + image
	}
	return image
}

// resolveImage finds the image of a launch: an alias the fake knows on the release or daily remote, a
// blueprint, or a URL (taken as the latest LTS). Otherwise the daemon's refusals: an unknown remote
// (src/daemon/ubuntu_image_host.cpp) or image (ImageNotFoundException,
// include/multipass/exceptions/image_vault_exceptions.h).
func resolveImage(remote, name string) (image, string, error) {
	if strings.Contains(name, "://") {
		return noble, "", nil
	}
	if remote != "" && remote != "release" && remote != "daily" {
		return image{}, "", daemonError{message: fmt.Sprintf(
			"Remote \"%s\" is unknown or unreachable. If image mirror is enabled, please confirm it is valid.", remote)}
	}
	if img, ok := images[strings.ToLower(name)]; ok {
		return img, "", nil
	}
	if img, ok := blueprints[strings.ToLower(name)]; ok && remote == "" {
		return img, blueprintWarning, nil
	}
	return image{}, "", daemonError{message: fmt.Sprintf("Unable to find an image matching \"%s\" in remote \"%s\".", name, remote)}
}

var hostname = regexp.MustCompile(`^([a-zA-Z]|[a-zA-Z][a-zA-Z0-9\-]*[a-zA-Z0-9])$`)

// validHostname is mp::utils::valid_hostname (src/utils/utils.cpp): letters, digits and hyphens,
// starting with a letter and ending with a letter or digit.
func validHostname(name string) bool { return hostname.MatchString(name) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var (
	petAdjectives = []string{"agile", "brave", "calm", "eager", "fond", "jolly", "keen", "lively", "proud", "witty"}
	petAnimals    = []string{"badger", "crane", "dingo", "eagle", "ferret", "gecko", "heron", "lynx", "otter", "wombat"}
)

// petName makes a free name as the daemon's name generator does when --name is absent
// ("adjective-animal").
func petName(s *store) string {
	for i := 0; ; i++ {
		n := petAdjectives[rand.IntN(len(petAdjectives))] + "-" + petAnimals[rand.IntN(len(petAnimals))]
		if i > 200 {
			n += "-" + strconv.Itoa(i)
		}
		if _, taken := s.Instances[n]; !taken {
			return n
		}
	}
}

// invalidTarget is mp::utils::invalid_target_path (src/utils/utils.cpp): the guest's root, /dev, /proc,
// /sys and the home folders cannot be mount points.
var invalidTarget = regexp.MustCompile(`^(/+|/+(dev|proc|sys)(/.*)*|/+home(/*)(/ubuntu/*)*)$`)

// mount mounts source at target in the instance as `multipass mount SOURCE NAME:TARGET` does after a
// launch (Launch::mount; Daemon::mount in src/daemon/daemon.cpp): the source is made absolute, an empty
// target is /home/ubuntu/<source folder name>, and a target that cannot be mounted or is already
// mounted fails with exit 2.
func (inv *invocation) mount(name, source, target string) int {
	abs, err := filepath.Abs(source)
	if err != nil {
		abs = source
	}
	tgt := "/home/ubuntu/" + filepath.Base(filepath.Clean(abs))
	if target != "" {
		tgt = path.Clean(target)
	}
	var problem string
	code, ok := inv.update("mount", func(s *store) (bool, error) {
		in, found := s.Instances[name]
		switch {
		case !found || in.Deleted:
			problem = fmt.Sprintf("instance '%s' does not exist", name)
		case invalidTarget.MatchString(tgt):
			problem = fmt.Sprintf("unable to mount to \"%s\"", tgt)
		default:
			for _, m := range in.Mounts {
				if m.Target == tgt {
					problem = fmt.Sprintf("\"%s\" is already mounted in '%s'", tgt, name)
				}
			}
		}
		if problem != "" {
			return false, daemonError{message: "The following errors occurred:\n" + problem}
		}
		in.Mounts = append(in.Mounts, Mount{Source: abs, Target: tgt})
		return true, nil
	})
	// The mount command's spinner clears the line when the daemon answers and again when it is destroyed.
	fmt.Fprint(inv.stdout, clearLine+clearLine)
	if !ok {
		return code
	}
	fmt.Fprintf(inv.stdout, "Mounted '%s' into '%s:%s'\n", source, name, target)
	return ExitOK
}
