//go:build e2e

// Package e2e runs the scripts in testdata/script against the real cdkx binary and a real PowerDNS.
//
// Start PowerDNS first, then run the suite with its addresses:
//
//	PDNS_API_PORT=18081 PDNS_DNS_PORT=15353 scripts/pdns-up.sh /tmp/pdns-e2e
//	PDNS_API_URL=http://127.0.0.1:18081 PDNS_API_KEY=e2e-key PDNS_DNS_PORT=15353 go test -tags e2e ./e2e/
//	scripts/pdns-down.sh /tmp/pdns-e2e
//
// Each script carries its own cloud assembly (cdkx.out/, and v2/cdkx.out/ for "after a change") and uses
// its own zone, named after the script ("deploy.test." for deploy.txtar), so that scripts run in parallel
// against one PowerDNS. Every script ends with `cdkx destroy --force` and checks the zone is gone; should
// a script fail before that, the zone named after it is deleted when the script ends (and a zone left by
// an earlier, interrupted run is deleted before the script starts).
//
// Commands the scripts use besides testscript's own:
//
//	exitcode N PROG [ARGS...]       run PROG and fail unless it exits with code N (stdout, stderr kept)
//	dnsq NAME TYPE                  ask PowerDNS over DNS; prints "status RCODE" and "NAME TTL TYPE DATA"
//	                                lines; fails when there is no answer (with !: when there is one)
//	pdnsq zone ZONE                 ask the PowerDNS HTTP API whether ZONE exists; prints "zone ZONE"
//	pdnsq rrset ZONE NAME TYPE      the rrset's "ttl N" and "record CONTENT" lines; fails when absent
//	jsonq FILE PATH                 the values at PATH of a JSON file (or stdout), one per line
//	jsonl [-last] FILE [KEY=VAL|KEY!=VAL ...]
//	                                the JSON lines of FILE (only its last line with -last) whose
//	                                top-level fields match
//	waitfile FILE [TIMEOUT]         wait (default 10s) for FILE to exist
//	checklist ROOT                  run `cdkx list --app` on every assembly under ROOT and check it names
//	                                every stack and resource of that assembly
//	envfile NAME FILE               set the environment variable NAME to FILE's content (trimmed)
//	holdlock [-for D|-until FILE] STATEFILE STACK READYFILE
//	                                (a program, for exec … &) hold STACK's lock in the SQLite state file
//	blackhole -for D [-answer PATH] URLFILE HITFILE
//	                                (a program, for exec … &) an HTTP server on 127.0.0.1 that accepts
//	                                connections and never answers (but GET PATH, the credentials check
//	                                of a run, with 200 {} at once); its URL goes to URLFILE, and HITFILE is
//	                                written when the first other request arrives; after D it closes
//	                                everything
//	slowproxy -delay D -until FILE [-pass PATH] TARGET URLFILE HITFILE
//	                                (a program, for exec … &) a reverse proxy to TARGET on 127.0.0.1 that
//	                                holds each request for D (but those of PATH, the credentials check of a
//	                                run); its URL goes to URLFILE, HITFILE gets a line when a held request
//	                                arrives; it stops once FILE exists
//	exitcodeof FILE PROG [ARGS...]  (a program, for exec … &) run PROG, pass it SIGINT and SIGTERM, write
//	                                its exit code to FILE and exit 0
package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"holdlock":   holdlockMain,
		"blackhole":  blackholeMain,
		"slowproxy":  slowproxyMain,
		"exitcodeof": exitcodeofMain,
	})
}

// pdns is the PowerDNS the scripts run against.
type pdns struct {
	apiURL, apiKey, serverID, dnsPort string
}

func TestScripts(t *testing.T) {
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"),
		serverID: envOr("PDNS_SERVER_ID", "localhost"), dnsPort: envOr("PDNS_DNS_PORT", "15353")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR, then set PDNS_API_URL " +
			"(e.g. http://127.0.0.1:18081), PDNS_API_KEY and PDNS_DNS_PORT")
	}
	if err := p.ping(); err != nil {
		t.Fatalf("PowerDNS at %s does not answer: %v; start it with scripts/pdns-up.sh DIR", p.apiURL, err)
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "cdkx"), "./cmd/cdkx")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cdkx: %v\n%s", err, out)
	}
	shared, err := filepath.Abs(filepath.Join("..", "..", "shared", "assemblies"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join("..", "testdata", "examples"))
	if err != nil {
		t.Fatal(err)
	}

	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("PDNS_API_URL", p.apiURL)
			env.Setenv("PDNS_API_KEY", p.apiKey)
			env.Setenv("PDNS_SERVER_ID", p.serverID)
			env.Setenv("PDNS_DNS_PORT", p.dnsPort)
			env.Setenv("SHARED_ASSEMBLIES", shared)
			env.Setenv("EXAMPLES", examples)
			for _, k := range []string{"RABBITMQ_API_URL", "RABBITMQ_USERNAME", "RABBITMQ_PASSWORD"} {
				env.Setenv(k, os.Getenv(k))
			}
			env.Values[pdnsKey{}] = p
			// The zone named after the script must not exist before it runs; should the script fail
			// before its own destroy, the zone is deleted when it ends.
			script := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
			if name, ok := strings.CutPrefix(script, "rmq-"); ok {
				if err := rmqCleanup(name); err != nil {
					return err
				}
				env.Defer(func() { _ = rmqCleanup(name) })
			}
			zone := script + ".test."
			if ok, _ := p.zoneExists(zone); ok {
				env.T().Log("setup: deleting zone", zone, "left behind by an earlier run")
				if err := p.deleteZone(zone); err != nil {
					return err
				}
			}
			env.Defer(func() {
				if ok, _ := p.zoneExists(zone); ok {
					env.T().Log("cleanup: deleting zone", zone, "left behind")
					_ = p.deleteZone(zone)
				}
			})
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "shared" {
				fi, err := os.Stat(shared)
				return err == nil && fi.IsDir(), nil
			}
			if cond == "rabbitmq" { // scripts that need a broker skip without one
				return os.Getenv("RABBITMQ_API_URL") != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitcode,
			"dnsq":      cmdDnsq,
			"pdnsq":     cmdPdnsq,
			"pdnspatch": cmdPdnspatch,
			"rmq":       cmdRmq,
			"rmqlogin":  cmdRmqLogin,
			"rmqmatch":  cmdRmqMatch,
			"jsonq":     cmdJsonq,
			"jsonl":     cmdJsonl,
			"waitfile":  cmdWaitfile,
			"checklist": cmdChecklist,
			"envfile":   cmdEnvfile,
		},
	})
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

type pdnsKey struct{}

func pdnsOf(ts *testscript.TestScript) pdns {
	return ts.Value(pdnsKey{}).(pdns)
}

// cmdExitcode runs a program and checks its exit code.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}

// cmdWaitfile waits for a file to exist and hold something (or be a directory).
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [TIMEOUT]")
	}
	timeout := 10 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		timeout = d
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(timeout); ; {
		// Not only there but written: os.WriteFile creates the file before it writes, and a script that
		// reads it at once (envfile) would read it empty.
		if fi, err := os.Stat(path); err == nil && (fi.IsDir() || fi.Size() > 0) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within %s", args[0], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdEnvfile sets an environment variable to a file's content.
func cmdEnvfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: envfile NAME FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}

// --- PowerDNS HTTP API ---

func (p pdns) get(path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.apiURL, "/")+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", p.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (p pdns) ping() error {
	code, body, err := p.get("/api/v1/servers/" + url.PathEscape(p.serverID))
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET server %s: %d %s", p.serverID, code, bytes.TrimSpace(body))
	}
	return err
}

type apiZone struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	RRSets []struct {
		Name    string `json:"name"`
		Type    string `json:"type"`
		TTL     int    `json:"ttl"`
		Records []struct {
			Content  string `json:"content"`
			Disabled bool   `json:"disabled"`
		} `json:"records"`
	} `json:"rrsets"`
}

// zone returns the zone, or nil when PowerDNS does not know it.
func (p pdns) zone(name string) (*apiZone, error) {
	code, body, err := p.get("/api/v1/servers/" + url.PathEscape(p.serverID) + "/zones/" + url.PathEscape(name))
	switch {
	case err != nil:
		return nil, err
	case code == http.StatusNotFound || code == http.StatusUnprocessableEntity:
		return nil, nil
	case code != http.StatusOK:
		return nil, fmt.Errorf("GET zone %s: %d %s", name, code, bytes.TrimSpace(body))
	}
	var z apiZone
	if err := json.Unmarshal(body, &z); err != nil {
		return nil, fmt.Errorf("GET zone %s: %w", name, err)
	}
	return &z, nil
}

func (p pdns) zoneExists(name string) (bool, error) {
	z, err := p.zone(name)
	return z != nil, err
}

func (p pdns) deleteZone(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(p.apiURL, "/") + "/api/v1/servers/" + url.PathEscape(p.serverID) + "/zones/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", p.apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// cmdPdnsq asks the PowerDNS HTTP API whether a zone or an rrset exists.
func cmdPdnsq(ts *testscript.TestScript, neg bool, args []string) {
	p := pdnsOf(ts)
	usage := "usage: pdnsq zone ZONE | pdnsq rrset ZONE NAME TYPE"
	if len(args) < 2 {
		ts.Fatalf("%s", usage)
	}
	z, err := p.zone(args[1])
	ts.Check(err)
	var found bool
	switch {
	case args[0] == "zone" && len(args) == 2:
		if found = z != nil; found {
			fmt.Fprintf(ts.Stdout(), "zone %s kind %s rrsets %d\n", z.Name, z.Kind, len(z.RRSets))
		}
	case args[0] == "rrset" && len(args) == 4:
		if z == nil {
			break
		}
		name, rtype := strings.ToLower(args[2]), strings.ToUpper(args[3])
		for _, rr := range z.RRSets {
			if strings.ToLower(rr.Name) != name || rr.Type != rtype {
				continue
			}
			found = true
			fmt.Fprintf(ts.Stdout(), "ttl %d\n", rr.TTL)
			var recs []string
			for _, r := range rr.Records {
				recs = append(recs, r.Content)
			}
			sort.Strings(recs)
			for _, r := range recs {
				fmt.Fprintf(ts.Stdout(), "record %s\n", r)
			}
		}
	default:
		ts.Fatalf("%s", usage)
	}
	what := strings.Join(args, " ")
	if found && neg {
		ts.Fatalf("pdnsq: %s exists in PowerDNS, want absent", what)
	}
	if !found && !neg {
		ts.Fatalf("pdnsq: %s does not exist in PowerDNS", what)
	}
}

// --- DNS over UDP (TCP when truncated) ---

var dnsTypes = map[string]uint16{"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
	"AAAA": 28, "SRV": 33, "CAA": 257, "ANY": 255}

var rcodes = map[int]string{0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}

func typeName(t uint16) string {
	for n, v := range dnsTypes {
		if v == t {
			return n
		}
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// cmdDnsq resolves NAME TYPE against PowerDNS on 127.0.0.1:$PDNS_DNS_PORT.
func cmdDnsq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: dnsq NAME TYPE")
	}
	name := args[0]
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	qtype, ok := dnsTypes[strings.ToUpper(args[1])]
	if !ok {
		ts.Fatalf("dnsq: unknown type %q", args[1])
	}
	addr := net.JoinHostPort("127.0.0.1", ts.Getenv("PDNS_DNS_PORT"))
	rcode, answers, err := dnsQuery(addr, name, qtype)
	ts.Check(err)
	rc, ok := rcodes[rcode]
	if !ok {
		rc = "RCODE" + strconv.Itoa(rcode)
	}
	fmt.Fprintf(ts.Stdout(), "status %s\n", rc)
	for _, a := range answers {
		fmt.Fprintln(ts.Stdout(), a)
	}
	if len(answers) > 0 && neg {
		ts.Fatalf("dnsq: %s %s has %d answer(s), want none", name, args[1], len(answers))
	}
	if len(answers) == 0 && !neg {
		ts.Fatalf("dnsq: %s %s has no answer (%s)", name, args[1], rc)
	}
}

func dnsQuery(addr, name string, qtype uint16) (int, []string, error) {
	id := uint16(rand.Uint32())
	q := binary.BigEndian.AppendUint16(nil, id)
	q = append(q, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0) // flags, 1 question
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return 0, nil, fmt.Errorf("dnsq: bad name %q", name)
		}
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	q = append(q, 0)
	q = binary.BigEndian.AppendUint16(q, qtype)
	q = binary.BigEndian.AppendUint16(q, 1) // IN

	resp, err := dnsExchange("udp", addr, q)
	if err == nil && len(resp) > 3 && resp[2]&0x02 != 0 { // truncated
		resp, err = dnsExchange("tcp", addr, q)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("dnsq %s: %w", addr, err)
	}
	if len(resp) < 12 || binary.BigEndian.Uint16(resp) != id {
		return 0, nil, fmt.Errorf("dnsq %s: malformed or mismatched answer", addr)
	}
	return parseDNS(resp)
}

func dnsExchange(network, addr string, q []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if network == "udp" {
		if _, err := c.Write(q); err != nil {
			return nil, err
		}
		buf := make([]byte, 65535)
		n, err := c.Read(buf)
		return buf[:n], err
	}
	if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)); err != nil {
		return nil, err
	}
	var l [2]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	_, err = io.ReadFull(c, buf)
	return buf, err
}

var errShort = errors.New("dnsq: answer too short")

// readName reads a possibly compressed name at off; it returns the name and the offset after it.
func readName(msg []byte, off int) (string, int, error) {
	var labels []string
	end := -1
	for jumps := 0; ; {
		if off >= len(msg) {
			return "", 0, errShort
		}
		l := int(msg[off])
		switch {
		case l == 0:
			if end < 0 {
				end = off + 1
			}
			return strings.Join(labels, ".") + ".", end, nil
		case l&0xC0 == 0xC0:
			if off+1 >= len(msg) || jumps > 64 {
				return "", 0, errShort
			}
			if end < 0 {
				end = off + 2
			}
			off = int(binary.BigEndian.Uint16(msg[off:]) & 0x3FFF)
			jumps++
		default:
			if off+1+l > len(msg) {
				return "", 0, errShort
			}
			labels = append(labels, string(msg[off+1:off+1+l]))
			off += 1 + l
		}
	}
}

func parseDNS(msg []byte) (int, []string, error) {
	rcode := int(msg[3] & 0x0F)
	qd, an := int(binary.BigEndian.Uint16(msg[4:])), int(binary.BigEndian.Uint16(msg[6:]))
	off := 12
	for range qd {
		_, next, err := readName(msg, off)
		if err != nil {
			return 0, nil, err
		}
		off = next + 4
	}
	var out []string
	for range an {
		name, next, err := readName(msg, off)
		if err != nil {
			return 0, nil, err
		}
		off = next
		if off+10 > len(msg) {
			return 0, nil, errShort
		}
		rtype := binary.BigEndian.Uint16(msg[off:])
		ttl := binary.BigEndian.Uint32(msg[off+4:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+rdlen > len(msg) {
			return 0, nil, errShort
		}
		data, err := rdata(msg, off, rdlen, rtype)
		if err != nil {
			return 0, nil, err
		}
		off += rdlen
		out = append(out, fmt.Sprintf("%s %d %s %s", strings.ToLower(name), ttl, typeName(rtype), data))
	}
	sort.Strings(out)
	return rcode, out, nil
}

func rdata(msg []byte, off, n int, rtype uint16) (string, error) {
	rd := msg[off : off+n]
	switch rtype {
	case 1, 28: // A, AAAA
		a, ok := netip.AddrFromSlice(rd)
		if !ok {
			return "", errShort
		}
		return a.String(), nil
	case 2, 5, 12: // NS, CNAME, PTR
		s, _, err := readName(msg, off)
		return strings.ToLower(s), err
	case 15: // MX
		if n < 3 {
			return "", errShort
		}
		s, _, err := readName(msg, off+2)
		return fmt.Sprintf("%d %s", binary.BigEndian.Uint16(rd), strings.ToLower(s)), err
	case 33: // SRV
		if n < 7 {
			return "", errShort
		}
		s, _, err := readName(msg, off+6)
		return fmt.Sprintf("%d %d %d %s", binary.BigEndian.Uint16(rd), binary.BigEndian.Uint16(rd[2:]),
			binary.BigEndian.Uint16(rd[4:]), strings.ToLower(s)), err
	case 16: // TXT
		var parts []string
		for i := 0; i < n; {
			l := int(rd[i])
			if i+1+l > n {
				return "", errShort
			}
			parts = append(parts, strconv.Quote(string(rd[i+1:i+1+l])))
			i += 1 + l
		}
		return strings.Join(parts, " "), nil
	case 257: // CAA
		if n < 2 || 2+int(rd[1]) > n {
			return "", errShort
		}
		tl := int(rd[1])
		return fmt.Sprintf("%d %s %q", rd[0], rd[2:2+tl], rd[2+tl:]), nil
	}
	return fmt.Sprintf("\\# %d %x", n, rd), nil
}

// --- JSON ---

// cmdJsonq prints the values at a path of a JSON document, one per line: strings as they are, anything
// else as compact JSON. Path segments are separated by dots: a key, an array index, * (every element or
// value), [key=value] (the elements whose field key renders as value), or # (the length). It fails when
// the path yields nothing (with !: when it yields something).
func cmdJsonq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonq FILE PATH")
	}
	var doc any
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("jsonq: %s: %v", args[0], err)
	}
	segs, err := splitPath(args[1])
	ts.Check(err)
	vals := []any{doc}
	for _, seg := range segs {
		vals = step(vals, seg)
	}
	for _, v := range vals {
		fmt.Fprintln(ts.Stdout(), render(v))
	}
	if len(vals) > 0 && neg {
		ts.Fatalf("jsonq: %s yields %d value(s), want none", args[1], len(vals))
	}
	if len(vals) == 0 && !neg {
		ts.Fatalf("jsonq: %s yields nothing in %s", args[1], args[0])
	}
}

// splitPath splits at dots outside brackets.
func splitPath(p string) ([]string, error) {
	var segs []string
	depth, start := 0, 0
	for i, c := range p {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				segs = append(segs, p[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("jsonq: unbalanced brackets in %q", p)
	}
	segs = append(segs, p[start:])
	var out []string
	for _, s := range segs {
		// "resources[logicalId=X]" is "resources" then "[logicalId=X]".
		if i := strings.IndexByte(s, '['); i > 0 {
			out = append(out, s[:i], s[i:])
		} else if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func step(vals []any, seg string) []any {
	var out []any
	for _, v := range vals {
		switch {
		case seg == "#":
			switch x := v.(type) {
			case []any:
				out = append(out, json.Number(strconv.Itoa(len(x))))
			case map[string]any:
				out = append(out, json.Number(strconv.Itoa(len(x))))
			}
		case seg == "*":
			out = append(out, elems(v)...)
		case strings.HasPrefix(seg, "[") && strings.HasSuffix(seg, "]"):
			k, want, _ := strings.Cut(seg[1:len(seg)-1], "=")
			for _, e := range elems(v) {
				if m, ok := e.(map[string]any); ok && m[k] != nil && render(m[k]) == want {
					out = append(out, e)
				}
			}
		default:
			switch x := v.(type) {
			case map[string]any:
				if e, ok := x[seg]; ok {
					out = append(out, e)
				}
			case []any:
				if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(x) {
					out = append(out, x[i])
				}
			}
		}
	}
	return out
}

// elems returns an array's elements, or a map's values in key order.
func elems(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = x[k]
		}
		return out
	}
	return nil
}

func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// cmdJsonl prints the lines of a JSON-lines file whose top-level fields match every KEY=VAL (the field
// renders as VAL) and KEY!=VAL (it does not; an absent field renders as ""). With -last only the last
// line is considered. It fails when no line matches (with !: when one does).
func cmdJsonl(ts *testscript.TestScript, neg bool, args []string) {
	last := len(args) > 0 && args[0] == "-last"
	if last {
		args = args[1:]
	}
	if len(args) < 1 {
		ts.Fatalf("usage: jsonl [-last] FILE [KEY=VAL|KEY!=VAL ...]")
	}
	type cond struct {
		key, val string
		not      bool
	}
	var conds []cond
	for _, a := range args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			ts.Fatalf("jsonl: bad condition %q", a)
		}
		c := cond{key: k, val: v}
		if strings.HasSuffix(k, "!") {
			c.key, c.not = strings.TrimSuffix(k, "!"), true
		}
		conds = append(conds, c)
	}
	lines := strings.Split(strings.TrimRight(ts.ReadFile(args[0]), "\n"), "\n")
	first := 0
	if last {
		first = len(lines) - 1
	}
	n := 0
	for i, line := range lines {
		if i < first || strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			ts.Fatalf("jsonl: %s line %d is not a JSON object: %v\n%s", args[0], i+1, err, line)
		}
		match := true
		for _, c := range conds {
			got := ""
			if v, ok := m[c.key]; ok && v != nil {
				got = render(v)
			}
			if (got == c.val) == c.not {
				match = false
				break
			}
		}
		if match {
			n++
			fmt.Fprintln(ts.Stdout(), line)
		}
	}
	if n > 0 && neg {
		ts.Fatalf("jsonl: %d line(s) of %s match, want none", n, args[0])
	}
	if n == 0 && !neg {
		ts.Fatalf("jsonl: no line of %s matches", args[0])
	}
}

// --- cdkx list over the shared assemblies ---

// cmdChecklist runs `cdkx list --app DIR` for every assembly under ROOT (DIR is ROOT/x/cdkx.out when it
// exists, else ROOT/x) and checks that its output names every stack of the manifest and every resource
// (with its type) of every template that exists. It prints one "NAME: N stacks, M resources" line each.
func cmdChecklist(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: checklist ROOT")
	}
	entries, err := os.ReadDir(ts.MkAbs(args[0]))
	ts.Check(err)
	var report []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(ts.MkAbs(args[0]), e.Name())
		if fi, err := os.Stat(filepath.Join(dir, "cdkx.out")); err == nil && fi.IsDir() {
			dir = filepath.Join(dir, "cdkx.out")
		}
		want, err := assemblyContents(dir)
		if err != nil {
			ts.Fatalf("checklist: %s: %v", e.Name(), err)
		}
		// Assemblies with errors (a missing template) are still listed, and exit 1.
		var ee *exec.ExitError
		if err := ts.Exec("cdkx", "list", "--app", dir); err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
			ts.Fatalf("checklist: cdkx list --app %s: %v", dir, err)
		}
		out := ts.ReadFile("stdout")
		lines := strings.Split(out, "\n")
		hasLine := func(fields ...string) bool {
			return slices.ContainsFunc(lines, func(l string) bool {
				f := strings.Fields(l)
				return len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields)
			})
		}
		nres := 0
		for _, s := range want {
			if !hasLine(s.id) {
				ts.Fatalf("checklist: cdkx list --app %s does not list stack %s", dir, s.id)
			}
			for _, r := range s.resources {
				if !hasLine(r[0], r[1]) {
					ts.Fatalf("checklist: cdkx list --app %s does not list resource %s (%s) of stack %s", dir, r[0], r[1], s.id)
				}
				nres++
			}
		}
		report = append(report, fmt.Sprintf("%s: %d stacks, %d resources", e.Name(), len(want), nres))
	}
	for _, l := range report {
		fmt.Fprintln(ts.Stdout(), l)
	}
}

type wantStack struct {
	id        string
	resources [][2]string // logical ID, type
}

// assemblyContents reads the stacks of a manifest and the resources of their templates (both layouts).
func assemblyContents(dir string) ([]wantStack, error) {
	var m struct {
		Artifacts map[string]struct {
			Type       string `json:"type"`
			Properties struct {
				TemplateFile string `json:"templateFile"`
			} `json:"properties"`
		} `json:"artifacts"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var out []wantStack
	for id, a := range m.Artifacts {
		if a.Type != "cdkx:stack" {
			continue
		}
		s := wantStack{id: id}
		tb, err := os.ReadFile(filepath.Join(dir, a.Properties.TemplateFile))
		if errors.Is(err, os.ErrNotExist) {
			out = append(out, s) // listed as "(template missing)"
			continue
		}
		if err != nil {
			return nil, err
		}
		var t map[string]json.RawMessage
		if err := json.Unmarshal(tb, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Properties.TemplateFile, err)
		}
		resources := t
		if raw, ok := t["resources"]; ok {
			resources = nil
			if err := json.Unmarshal(raw, &resources); err != nil {
				return nil, fmt.Errorf("%s: resources: %w", a.Properties.TemplateFile, err)
			}
		} else if _, ok := t["outputs"]; ok {
			resources = nil
		}
		for rid, raw := range resources {
			var r struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, fmt.Errorf("%s: resources.%s: %w", a.Properties.TemplateFile, rid, err)
			}
			s.resources = append(s.resources, [2]string{rid, r.Type})
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// --- holdlock: a separate program, so that scripts can run it in the background ---

// holdlockMain takes a stack's lock in a SQLite state file, as another cdkx run would, writes READYFILE,
// and holds the lock for -for, or until -until FILE exists (at most a minute), then releases it.
func holdlockMain() {
	fs := flag.NewFlagSet("holdlock", flag.ExitOnError)
	hold := fs.Duration("for", 0, "how long to hold the lock")
	until := fs.String("until", "", "hold the lock until this file exists")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 3 || (*hold == 0) == (*until == "") {
		fmt.Fprintln(os.Stderr, "usage: holdlock -for DURATION|-until FILE STATEFILE STACK READYFILE")
		os.Exit(2)
	}
	statePath, stack, ready := fs.Arg(0), fs.Arg(1), fs.Arg(2)
	if err := holdlock(statePath, stack, ready, *hold, *until); err != nil {
		fmt.Fprintln(os.Stderr, "holdlock:", err)
		os.Exit(1)
	}
}

func holdlock(statePath, stack, ready string, hold time.Duration, until string) error {
	ctx := context.Background()
	b, err := sqlite.Open(ctx, statePath)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	info := state.LockInfo{ID: fmt.Sprintf("holdlock-%d", os.Getpid()), Stack: stack, Operation: "e2e-holdlock",
		User: "e2e-holder", Host: "lockhost", PID: os.Getpid()}
	if err := b.Lock(ctx, info); err != nil {
		return err
	}
	fmt.Printf("locked %s as %s\n", stack, info.ID)
	if err := os.WriteFile(ready, []byte(info.ID+"\n"), 0o644); err != nil {
		_ = b.Unlock(ctx, stack, info.ID)
		return err
	}
	if until != "" {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(until); err == nil {
				break
			}
		}
	} else {
		time.Sleep(hold)
	}
	if err := b.Unlock(ctx, stack, info.ID); err != nil {
		return err
	}
	fmt.Printf("released %s\n", stack)
	return nil
}

// blackholeMain serves 127.0.0.1 without ever answering: a provider that hangs. It writes its URL to
// URLFILE, writes HITFILE when the first request (other than GET -answer's path) has arrived, and after
// -for closes the listener and every connection, then exits.
func blackholeMain() {
	fs := flag.NewFlagSet("blackhole", flag.ExitOnError)
	hold := fs.Duration("for", 0, "how long to keep connections open")
	answer := fs.String("answer", "", "answer GET of this path with 200 {} at once (a run's credentials check)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 2 || *hold <= 0 {
		fmt.Fprintln(os.Stderr, "usage: blackhole -for DURATION [-answer PATH] URLFILE HITFILE")
		os.Exit(2)
	}
	if err := blackhole(*hold, *answer, fs.Arg(0), fs.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "blackhole:", err)
		os.Exit(1)
	}
}

func blackhole(hold time.Duration, answer, urlFile, hitFile string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(urlFile, []byte("http://"+l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	closed := make(chan struct{})
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer != "" && r.Method == http.MethodGet && r.URL.Path == answer {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}"))
			return
		}
		_ = os.WriteFile(hitFile, []byte(r.Method+" "+r.URL.Path+"\n"), 0o644)
		<-closed // never answer: Close drops the connection
	})}
	go func() { _ = srv.Serve(l) }()
	time.Sleep(hold)
	_ = srv.Close()
	close(closed)
	fmt.Println("blackhole closed")
	return nil
}

// slowproxyMain forwards requests to a real server after a delay: a slow provider.
func slowproxyMain() {
	fs := flag.NewFlagSet("slowproxy", flag.ExitOnError)
	delay := fs.Duration("delay", 0, "how long to hold each request before forwarding it")
	until := fs.String("until", "", "stop once this file exists")
	pass := fs.String("pass", "", "forward requests of this path at once (a run's credentials check)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 3 || *delay <= 0 || *until == "" {
		fmt.Fprintln(os.Stderr, "usage: slowproxy -delay D -until FILE [-pass PATH] TARGET URLFILE HITFILE")
		os.Exit(2)
	}
	if err := slowproxy(*delay, *until, *pass, fs.Arg(0), fs.Arg(1), fs.Arg(2)); err != nil {
		fmt.Fprintln(os.Stderr, "slowproxy:", err)
		os.Exit(1)
	}
}

func slowproxy(delay time.Duration, until, pass, target, urlFile, hitFile string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var hits sync.Mutex
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pass != "" && r.URL.Path == pass {
			rp.ServeHTTP(w, r)
			return
		}
		hits.Lock()
		f, err := os.OpenFile(hitFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s\n", r.Method, r.URL.Path)
			_ = f.Close()
		}
		hits.Unlock()
		time.Sleep(delay)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	if err := os.WriteFile(urlFile, []byte("http://"+l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(until); err == nil {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

// exitcodeofMain runs a program, passing on SIGINT and SIGTERM, and writes its exit code to a file, so
// that a script can check the exact code of a program it ran in the background.
func exitcodeofMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exitcodeof FILE PROG [ARGS...]")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "exitcodeof:", err)
		os.Exit(1)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "exitcodeof:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "exitcodeof:", err)
		os.Exit(1)
	}
}
