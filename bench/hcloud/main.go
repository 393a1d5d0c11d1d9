// Command hcloud measures a deploy of a large Hetzner fleet with the real cdkx binary against
// cmd/hcloud-fake, and prints two tables: wall time against the critical path, and the HTTP requests per
// resource type.
//
// The fleet is generated like cdkx's own large-fleet example: N networks (10.i.0.0/16), each with one
// subnet, one spread placement group, one load balancer attached to the network with one service (port
// 80), S servers in the network and placement group, and one load-balancer target per server (private
// IP). The fake finishes every action after D (--action-duration).
//
// The critical path is the sum of action durations along the longest chain of changes that must run one
// after another: dependencies (a server needs its subnet, a target its server and its load balancer) and
// Hetzner's one-action-at-a-time rule per network and per load balancer (a load balancer's service and
// targets run one after another). It is computed from the generated fleet by earliest-start scheduling
// with unbounded concurrency, each awaited action costing D and each request nothing.
//
// Requests are counted by a reverse proxy between cdkx and the fake, each attributed to the resource type
// whose change sent it: by route, and for GET /actions polls by the command of the action polled.
//
// Usage: go run ./bench/hcloud [-networks 20] [-servers 10] [-action-duration 1s] [-concurrency 50]
// [-runs 1] [-keep]. It builds cdkx and hcloud-fake into a temporary directory first.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	networks := flag.Int("networks", 20, "networks in the fleet")
	servers := flag.Int("servers", 10, "servers per network (at most 10: a spread placement group's limit)")
	actionDur := flag.Duration("action-duration", time.Second, "how long each action of the fake runs")
	conc := flag.Int("concurrency", 50, "cdkx --concurrency")
	runs := flag.Int("runs", 1, "deploys to measure (each on a fresh fake, then destroyed)")
	keep := flag.Bool("keep", false, "keep the working directory (its path is printed)")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	work, err := os.MkdirTemp("", "cdkx-bench-hcloud-")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(work)
	}
	bin := filepath.Join(work, "bin")
	for _, pkg := range []string{"./cmd/cdkx", "./cmd/hcloud-fake"} {
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", pkg).CombinedOutput()
		if err != nil {
			log.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	app := filepath.Join(work, "cdkx.out")
	f := fleet(*networks, *servers)
	if err := f.write(app); err != nil {
		log.Fatal(err)
	}
	critical := f.criticalPath(*actionDur)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\tresources\tconcurrency\taction\tcritical path\twall time\tratio\trequests\t429s\t\n")
	var counts *counter
	for run := 1; run <= *runs; run++ {
		wall, c, err := deployOnce(ctx, bin, work, app, *actionDur, *conc)
		if err != nil {
			log.Fatal(err)
		}
		counts = c
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%.2f×\t%d\t%d\t\n", run, len(f.resources), *conc, *actionDur,
			critical.Round(time.Millisecond), wall.Round(time.Millisecond), wall.Seconds()/critical.Seconds(), c.total(), c.limited)
	}
	if err := tw.Flush(); err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	counts.print(os.Stdout, f.countByType())
}

// deployOnce starts a fake behind a counting proxy, deploys the fleet, destroys it, and returns the
// deploy's wall time and its request counts.
func deployOnce(ctx context.Context, bin, work, app string, actionDur time.Duration, conc int) (time.Duration, *counter, error) {
	const token = "bench-token-0123456789"
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	addr := l.Addr().String()
	l.Close()
	fake := exec.CommandContext(ctx, filepath.Join(bin, "hcloud-fake"), "--listen", addr, "--token", token,
		"--action-duration", actionDur.String())
	fake.Stderr = os.Stderr
	if err := fake.Start(); err != nil {
		return 0, nil, err
	}
	defer func() {
		_ = fake.Process.Signal(syscall.SIGTERM)
		_ = fake.Wait()
	}()
	target, _ := url.Parse("http://" + addr)
	for i := 0; ; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String()+"/v1/locations", nil)
		if err != nil {
			return 0, nil, err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			return 0, nil, fmt.Errorf("hcloud-fake did not start on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := &counter{byType: map[string]int{}, byRoute: map[string]int{}, actions: map[int64]string{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = c.observe
	srv := httptest.NewServer(proxy)
	defer srv.Close()

	dir, err := os.MkdirTemp(work, "run-")
	if err != nil {
		return 0, nil, err
	}
	env := append(os.Environ(), "CI=true", "HCLOUD_TOKEN="+token, "HCLOUD_ENDPOINT="+srv.URL+"/v1")
	cdkx := func(args ...string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "cdkx"), args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		if err != nil {
			return 0, fmt.Errorf("cdkx %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return time.Since(start), nil
	}
	wall, err := cdkx("deploy", "--app", app, "--concurrency", fmt.Sprint(conc))
	if err != nil {
		return 0, nil, err
	}
	snapshot := c.clone()
	if _, err := cdkx("destroy", "--app", app, "--force", "--concurrency", fmt.Sprint(conc)); err != nil {
		return 0, nil, err
	}
	return wall, snapshot, nil
}

// counter attributes each request to a resource type.
type counter struct {
	mu      sync.Mutex
	byType  map[string]int
	byRoute map[string]int
	actions map[int64]string // action ID → command
	limited int              // 429 answers
}

var idSegment = regexp.MustCompile(`/[0-9]+`)

// commandType maps an action's command to the resource type whose change started it.
var commandType = map[string]string{
	"create_server": "Server", "start_server": "Server", "delete_server": "Server",
	"add_subnet": "Subnet", "delete_subnet": "Subnet",
	"create_load_balancer": "LoadBalancer", "attach_to_network": "LoadBalancer", "delete_load_balancer": "LoadBalancer",
	"add_service": "LoadBalancerService", "delete_service": "LoadBalancerService",
	"add_target": "LoadBalancerTarget", "remove_target": "LoadBalancerTarget",
	"create_placement_group": "PlacementGroup",
}

// routeType maps a route (IDs replaced by {id}) to a resource type; "" for action polls.
func routeType(method, route string) string {
	switch {
	case strings.HasPrefix(route, "/v1/actions"):
		return ""
	case strings.Contains(route, "add_subnet"), strings.Contains(route, "delete_subnet"):
		return "Subnet"
	case strings.Contains(route, "add_service"), strings.Contains(route, "delete_service"):
		return "LoadBalancerService"
	case strings.Contains(route, "add_target"), strings.Contains(route, "remove_target"):
		return "LoadBalancerTarget"
	case strings.HasPrefix(route, "/v1/networks"):
		if method == http.MethodGet && route == "/v1/networks/{id}" {
			return "Subnet" // a subnet's create reads its network back for the gateway
		}
		return "Network"
	case strings.HasPrefix(route, "/v1/servers"):
		return "Server"
	case strings.HasPrefix(route, "/v1/placement_groups"):
		return "PlacementGroup"
	case strings.HasPrefix(route, "/v1/load_balancers"):
		if method == http.MethodGet && route == "/v1/load_balancers/{id}" {
			return "LoadBalancerService/Target"
		}
		return "LoadBalancer"
	}
	return "other"
}

func (c *counter) observe(resp *http.Response) error {
	req := resp.Request
	route := idSegment.ReplaceAllString(req.URL.Path, "/{id}")
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var env struct {
		Action *struct {
			ID      int64
			Command string
		} `json:"action"`
		Actions []struct {
			ID      int64
			Command string
		} `json:"actions"`
		NextActions []struct {
			ID      int64
			Command string
		} `json:"next_actions"`
	}
	_ = json.Unmarshal(body, &env)
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.StatusCode == http.StatusTooManyRequests {
		c.limited++
	}
	key := req.Method + " " + route
	if resp.StatusCode/100 != 2 {
		key += fmt.Sprintf(" → %d", resp.StatusCode)
	}
	c.byRoute[key]++
	typ := routeType(req.Method, route)
	if typ == "" { // an action poll: the type of the action's command
		typ = "actions (unattributed)"
		if env.Action != nil {
			if t, ok := commandType[env.Action.Command]; ok {
				typ = t
			}
		} else if len(env.Actions) > 0 {
			if t, ok := commandType[env.Actions[0].Command]; ok {
				typ = t
			}
		}
	}
	c.byType[typ]++
	return nil
}

func (c *counter) clone() *counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &counter{byType: map[string]int{}, byRoute: map[string]int{}, limited: c.limited}
	for k, v := range c.byType {
		out.byType[k] = v
	}
	for k, v := range c.byRoute {
		out.byRoute[k] = v
	}
	return out
}

func (c *counter) total() int {
	n := 0
	for _, v := range c.byType {
		n += v
	}
	return n
}

func (c *counter) print(w io.Writer, resources map[string]int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "resource type\tresources\trequests\tper resource\t\n")
	var types []string
	for t := range c.byType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		per := "-"
		if n := resources[t]; n > 0 {
			per = fmt.Sprintf("%.2f", float64(c.byType[t])/float64(n))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t\n", t, resources[t], c.byType[t], per)
	}
	if err := tw.Flush(); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "route\trequests\t\n")
	var routes []string
	for r := range c.byRoute {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		fmt.Fprintf(tw, "%s\t%d\t\n", r, c.byRoute[r])
	}
	if err := tw.Flush(); err != nil {
		log.Fatal(err)
	}
}
