//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdRmq reads the RabbitMQ management API as the admin user: `rmq PATH` prints the body of
// GET /api/PATH and fails unless it answers 200; `! rmq PATH` fails unless it answers 404.
func cmdRmq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: rmq PATH (under /api/, vhost / written %%2F)")
	}
	code, body := rmqGet(ts, args[0], os.Getenv("RABBITMQ_USERNAME"), os.Getenv("RABBITMQ_PASSWORD"))
	switch {
	case neg && code == http.StatusNotFound:
	case neg:
		ts.Fatalf("rmq %s: %d, want 404: %s", args[0], code, body)
	case code != http.StatusOK:
		ts.Fatalf("rmq %s: %d: %s", args[0], code, body)
	default:
		fmt.Fprintln(ts.Stdout(), body)
	}
}

// cmdRmqLogin checks that USER can log in to the management API with PASSWORD (GET /api/whoami).
func cmdRmqLogin(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: rmqlogin USER PASSWORD")
	}
	code, body := rmqGet(ts, "whoami", args[0], args[1])
	if ok := code == http.StatusOK; ok == neg {
		ts.Fatalf("rmqlogin %s: %d: %s", args[0], code, body)
	}
}

func rmqGet(ts *testscript.TestScript, path, user, password string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(os.Getenv("RABBITMQ_API_URL"), "/") + "/api/" + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	ts.Check(err)
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	return resp.StatusCode, string(b)
}

// rmqCleanup deletes what an rmq-NAME script may leave behind at RabbitMQ: vhosts named e2e-NAME… and the
// user svc-NAME.
func rmqCleanup(name string) error {
	base := strings.TrimSuffix(os.Getenv("RABBITMQ_API_URL"), "/")
	if base == "" {
		return nil
	}
	do := func(method, path string) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+"/api/"+path, nil)
		if err != nil {
			return 0, "", err
		}
		req.SetBasicAuth(os.Getenv("RABBITMQ_USERNAME"), os.Getenv("RABBITMQ_PASSWORD"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	_, body, err := do(http.MethodGet, "vhosts?columns=name")
	if err != nil {
		return err
	}
	var vhosts []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(body), &vhosts); err != nil {
		return fmt.Errorf("list vhosts: %w: %s", err, body)
	}
	for _, v := range vhosts {
		if strings.HasPrefix(v.Name, "e2e-"+name) {
			if _, _, err := do(http.MethodDelete, "vhosts/"+url.PathEscape(v.Name)); err != nil {
				return err
			}
		}
	}
	_, _, err = do(http.MethodDelete, "users/svc-"+name)
	return err
}

// cmdRmqMatch checks that the exported state (`cdkx state export` JSON in STATEFILE) records exactly the
// objects RabbitMQ holds in VHOST: the vhost itself, its exchanges (but the built-in ones), queues,
// policies and bindings (but the default exchange's). It prints both sides.
func cmdRmqMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: rmqmatch STATEFILE VHOST")
	}
	var exported struct {
		Stacks []struct {
			Resources []struct {
				Type       string `json:"type"`
				PhysicalID string `json:"physicalId"`
			} `json:"resources"`
		} `json:"stacks"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &exported))
	vhost := args[1]
	var recorded []string
	for _, s := range exported.Stacks {
		for _, r := range s.Resources {
			if r.PhysicalID == "" {
				continue
			}
			switch r.Type {
			case "RabbitMQ::Broker::VirtualHost":
				recorded = append(recorded, "vhost "+r.PhysicalID)
			case "RabbitMQ::Broker::Exchange", "RabbitMQ::Broker::Queue", "RabbitMQ::Broker::Policy":
				kind := strings.ToLower(r.Type[strings.LastIndex(r.Type, ":")+1:])
				name, _ := url.PathUnescape(r.PhysicalID[strings.Index(r.PhysicalID, "/")+1:])
				recorded = append(recorded, kind+" "+name)
			case "RabbitMQ::Broker::Binding":
				recorded = append(recorded, "binding")
			}
		}
	}
	var live []string
	get := func(path string, into any) bool {
		code, body := rmqGet(ts, path, os.Getenv("RABBITMQ_USERNAME"), os.Getenv("RABBITMQ_PASSWORD"))
		if code == http.StatusNotFound {
			return false
		}
		if code != http.StatusOK {
			ts.Fatalf("rmqmatch: GET %s: %d %s", path, code, body)
		}
		ts.Check(json.Unmarshal([]byte(body), into))
		return true
	}
	var one map[string]any
	if get("vhosts/"+url.PathEscape(vhost), &one) {
		live = append(live, "vhost "+vhost)
		var named []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		}
		for _, kind := range []string{"exchange", "queue", "policy"} {
			named = nil
			path := map[string]string{"exchange": "exchanges/", "queue": "queues/", "policy": "policies/"}[kind]
			get(path+url.PathEscape(vhost), &named)
			for _, n := range named {
				if kind == "exchange" && (n.Name == "" || strings.HasPrefix(n.Name, "amq.")) {
					continue
				}
				live = append(live, kind+" "+n.Name)
			}
		}
		named = nil
		get("bindings/"+url.PathEscape(vhost), &named)
		for _, b := range named {
			if b.Source != "" {
				live = append(live, "binding")
			}
		}
	}
	sort.Strings(recorded)
	sort.Strings(live)
	fmt.Fprintf(ts.Stdout(), "recorded: %s\nlive:     %s\n", strings.Join(recorded, ", "), strings.Join(live, ", "))
	if strings.Join(recorded, ",") != strings.Join(live, ",") {
		ts.Fatalf("rmqmatch: state and RabbitMQ disagree on vhost %s:\nrecorded %v\nlive     %v", vhost, recorded, live)
	}
}
