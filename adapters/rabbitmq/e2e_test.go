//go:build e2e

package rabbitmq_test

// End-to-end tests against a real RabbitMQ started by scripts/rmq-up.sh:
//
//	RMQ_API_PORT=15683 RMQ_AMQP_PORT=15682 RMQ_DIST_PORT=25683 RMQ_EPMD_PORT=14379 scripts/rmq-up.sh /tmp/rmq-e2e
//	RABBITMQ_API_URL=http://127.0.0.1:15683 RABBITMQ_USERNAME=admin RABBITMQ_PASSWORD=admin-secret \
//	  go test -tags e2e -count=1 ./adapters/rabbitmq/
//	scripts/rmq-down.sh /tmp/rmq-e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func e2eProvider(t *testing.T) *rabbitmq.Provider {
	t.Helper()
	if os.Getenv("RABBITMQ_API_URL") == "" || os.Getenv("RABBITMQ_USERNAME") == "" || os.Getenv("RABBITMQ_PASSWORD") == "" {
		t.Skip("RABBITMQ_API_URL, RABBITMQ_USERNAME and RABBITMQ_PASSWORD are not set; start RabbitMQ with scripts/rmq-up.sh DIR and set " +
			"RABBITMQ_API_URL=http://127.0.0.1:$RMQ_API_PORT RABBITMQ_USERNAME=admin RABBITMQ_PASSWORD=$RMQ_ADMIN_PASS (defaults 15673, admin-secret)")
	}
	p, err := rabbitmq.NewFromEnv(os.Getenv)
	if err != nil {
		t.Fatalf("NewFromEnv = %v", err)
	}
	return p
}

func unique(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "e2e-" + hex.EncodeToString(b)
}

// raw sends one request straight to the management API, as user:pass, and returns the status, the
// Location header and the decoded body.
func raw(t *testing.T, method, path, user, pass string, body any) (int, string, map[string]any) {
	t.Helper()
	var in *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = strings.NewReader(string(b))
	} else {
		in = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(t.Context(), method, strings.TrimRight(os.Getenv("RABBITMQ_API_URL"), "/")+"/api"+path, in)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header.Get("Location"), out
}

func admin(t *testing.T, method, path string, body any) (int, string, map[string]any) {
	t.Helper()
	return raw(t, method, path, os.Getenv("RABBITMQ_USERNAME"), os.Getenv("RABBITMQ_PASSWORD"), body)
}

// brokerVersion is the RabbitMQ version, e.g. "3.10.8".
func brokerVersion(t *testing.T) string {
	t.Helper()
	_, _, out := admin(t, "GET", "/overview", nil)
	v, _ := out["rabbitmq_version"].(string)
	return v
}

// lifecycle creates an object, checks that a second create is refused, reads it back and locates it.
func lifecycle(t *testing.T, p *rabbitmq.Provider, typ string, in resource.Properties, wantID string, wantRead resource.Properties) resource.CreateResult {
	t.Helper()
	ctx := t.Context()
	c, err := p.Create(ctx, resource.CreateRequest{Type: typ, Properties: in})
	if err != nil {
		t.Fatalf("create %s: %v", typ, err)
	}
	if wantID != "" && c.PhysicalID != wantID {
		t.Errorf("create %s: physical ID %q, want %q", typ, c.PhysicalID, wantID)
	}
	if _, err := p.Create(ctx, resource.CreateRequest{Type: typ, Properties: in}); !errors.Is(err, resource.ErrAlreadyExists) {
		t.Errorf("second create %s = %v, want ErrAlreadyExists", typ, err)
	}
	r, err := p.Read(ctx, resource.ReadRequest{Type: typ, PhysicalID: c.PhysicalID, Properties: in})
	if err != nil {
		t.Fatalf("read %s: %v", typ, err)
	}
	if wantRead == nil {
		wantRead = in
	}
	if diff := cmp.Diff(wantRead, r.Properties); diff != "" {
		t.Errorf("read %s (-want +got):\n%s", typ, diff)
	}
	if diff := cmp.Diff(c.Outputs, r.Outputs); diff != "" {
		t.Errorf("read %s outputs (-create +read):\n%s", typ, diff)
	}
	if id, err := p.Locate(ctx, resource.CreateRequest{Type: typ, Properties: in}); err != nil || id != c.PhysicalID {
		t.Errorf("locate %s = %q, %v, want %q", typ, id, err, c.PhysicalID)
	}
	t.Logf("%s %s created; outputs %v", typ, c.PhysicalID, c.Outputs)
	return c
}

func TestE2ELifecycle(t *testing.T) {
	p := e2eProvider(t)
	ctx := t.Context()
	start := time.Now()
	version := brokerVersion(t)
	t.Logf("RabbitMQ %s", version)
	// A "/" in the vhost name checks the escaping of every URL and physical ID.
	vhost := unique(t) + "/app"
	ev := url.PathEscape(vhost)
	user := unique(t) + "-order-service"
	t.Cleanup(func() {
		ctx := context.Background()
		_ = p.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: vhost})
		_ = p.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeUser, PhysicalID: user})
	})

	// VirtualHost.
	vin := resource.Properties{"name": vhost, "description": "Orders", "tags": []any{"team-a", "prod"}, "defaultQueueType": "classic"}
	vc := lifecycle(t, p, rabbitmq.TypeVirtualHost, vin, vhost, nil)
	vNew := resource.Properties{"name": vhost, "description": "Orders, v2", "tags": []any{"prod"}, "defaultQueueType": "classic"}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: vc.PhysicalID, Old: vin, New: vNew,
		Changed: []string{"description", "tags"}}); err != nil {
		t.Fatalf("update vhost: %v", err)
	}
	if r, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: vhost, Properties: vNew}); err != nil {
		t.Errorf("read updated vhost: %v", err)
	} else if diff := cmp.Diff(vNew, r.Properties); diff != "" {
		t.Errorf("read updated vhost (-want +got):\n%s", diff)
	}
	// Changing the default queue type: RabbitMQ 3.10 keeps the old one, 3.11+ changes it.
	vQuorum := resource.Properties{"name": vhost, "description": "Orders, v2", "tags": []any{"prod"}, "defaultQueueType": "quorum"}
	_, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: vhost, Old: vNew, New: vQuorum,
		Changed: []string{"defaultQueueType"}})
	if strings.HasPrefix(version, "3.10.") || strings.HasPrefix(version, "3.9.") {
		if err == nil || !strings.Contains(err.Error(), "kept its default queue type classic instead of quorum") {
			t.Errorf("update default queue type on %s = %v, want an error saying RabbitMQ kept it", version, err)
		} else {
			t.Logf("update default queue type on %s: %v", version, err)
		}
	} else if err != nil {
		t.Errorf("update default queue type on %s: %v", version, err)
	}

	// Exchanges: a topic one with arguments, and a fanout dead-letter exchange.
	xin := resource.Properties{"vhost": vhost, "name": "orders", "type": "topic", "arguments": map[string]any{"alternate-exchange": "unrouted"}}
	xc := lifecycle(t, p, rabbitmq.TypeExchange, xin, ev+"/orders", nil)
	dlx := lifecycle(t, p, rabbitmq.TypeExchange, resource.Properties{"vhost": vhost, "name": "dlx", "type": "fanout", "durable": true}, ev+"/dlx", nil)
	// RabbitMQ refuses to redeclare the exchange with another type; the adapter never gets there, since
	// it reads first and reports the existing exchange.
	status, _, body := admin(t, "PUT", "/exchanges/"+ev+"/orders", map[string]any{"type": "fanout", "durable": true})
	if reason, _ := body["reason"].(string); status != 400 || !strings.Contains(reason, "inequivalent arg 'type' for exchange 'orders'") {
		t.Errorf("raw PUT of the exchange with another type = %d %v, want 400 inequivalent arg 'type'", status, body)
	} else {
		t.Logf("raw PUT with another type: %d %s", status, reason)
	}
	_, err = p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypeExchange, Properties: resource.Properties{"vhost": vhost, "name": "orders", "type": "fanout"}})
	if !errors.Is(err, resource.ErrAlreadyExists) {
		t.Errorf("create of the exchange with another type = %v, want ErrAlreadyExists", err)
	}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeExchange, PhysicalID: xc.PhysicalID, Old: xin, New: xin, Changed: []string{"type"}}); err == nil {
		t.Error("update of an exchange's type succeeded, want an error (it must be replaced)")
	}
	_, err = p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypeExchange, Properties: resource.Properties{"vhost": vhost, "name": "amq.mine", "type": "direct"}})
	if pe := (*resource.ProviderError)(nil); !errors.As(err, &pe) || pe.Status != 401 || !strings.HasPrefix(pe.Message, "Access refused.") {
		t.Errorf("create amq.mine = %v, want 401 Access refused.", err)
	}

	// Queues: one plain (RabbitMQ adds nothing), one with arguments, one quorum.
	qin := resource.Properties{"vhost": vhost, "name": "orders.created", "arguments": map[string]any{"x-max-length": json.Number("10000")}}
	qc := lifecycle(t, p, rabbitmq.TypeQueue, qin, ev+"/orders.created", nil)
	dead := lifecycle(t, p, rabbitmq.TypeQueue, resource.Properties{"vhost": vhost, "name": "orders.dead"}, ev+"/orders.dead", nil)
	lifecycle(t, p, rabbitmq.TypeQueue, resource.Properties{"vhost": vhost, "name": "orders.quorum", "arguments": map[string]any{"x-queue-type": "quorum"}},
		ev+"/orders.quorum", nil)
	_, err = p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypeQueue, Properties: resource.Properties{"vhost": unique(t), "name": "q"}})
	if pe := (*resource.ProviderError)(nil); !errors.As(err, &pe) || pe.Status != 404 || !strings.Contains(pe.Message, "does not exist") || errors.Is(err, resource.ErrNotFound) {
		t.Errorf("create a queue in a missing vhost = %v, want 404 vhost … does not exist (not ErrNotFound)", err)
	}

	// Bindings: the properties key comes from the Location header.
	bin := resource.Properties{"vhost": vhost, "source": xc.Outputs["name"], "destination": qc.Outputs["name"], "routingKey": "order.created"}
	bc := lifecycle(t, p, rabbitmq.TypeBinding, bin, ev+"/orders/queue/orders.created/order.created", nil)
	if bc.Outputs["propertiesKey"] != "order.created" || bc.Outputs["vhost"] != vhost {
		t.Errorf("binding outputs = %v, want propertiesKey order.created", bc.Outputs)
	}
	dlxBinding := lifecycle(t, p, rabbitmq.TypeBinding, resource.Properties{"vhost": vhost, "source": dlx.Outputs["name"], "destination": dead.Outputs["name"]},
		ev+"/dlx/queue/orders.dead/~", nil)
	odd := resource.Properties{"vhost": vhost, "source": "orders", "destination": "dlx", "destinationType": "exchange",
		"routingKey": "a b/c%d", "arguments": map[string]any{"x-match": "all"}}
	oc := lifecycle(t, p, rabbitmq.TypeBinding, odd, "", nil)
	key, _ := oc.Outputs["propertiesKey"].(string)
	if !strings.HasPrefix(key, "a+b%2Fc%25d~") {
		t.Errorf("properties key %q, want a+b%%2Fc%%25d~<hash of the arguments>", key)
	}
	tilde := lifecycle(t, p, rabbitmq.TypeBinding, resource.Properties{"vhost": vhost, "source": "orders", "destination": "dlx",
		"destinationType": "exchange", "routingKey": "x~y"}, ev+"/orders/exchange/dlx/x%257Ey", nil)
	if tilde.Outputs["propertiesKey"] != "x%7Ey" {
		t.Errorf("properties key %v, want x%%7Ey", tilde.Outputs["propertiesKey"])
	}
	// RabbitMQ's POST is idempotent: the same binding again is 201 with the same key.
	status, loc, _ := admin(t, "POST", "/bindings/"+ev+"/e/orders/q/orders.created", map[string]any{"routing_key": "order.created", "arguments": map[string]any{}})
	if status != 201 || !strings.HasSuffix(loc, "/order.created") {
		t.Errorf("raw POST of an existing binding = %d, Location %q; want 201 …/order.created", status, loc)
	} else {
		t.Logf("raw POST of an existing binding: %d, Location %s", status, loc)
	}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeBinding, PhysicalID: bc.PhysicalID, Old: bin, New: bin}); err != nil {
		t.Errorf("update of a binding without changes: %v", err)
	}

	// Policy.
	pin := resource.Properties{"vhost": vhost, "name": "dead-lettering", "pattern": `^orders\.created$`, "applyTo": "queues",
		"priority": json.Number("1"), "definition": map[string]any{"dead-letter-exchange": "dlx"}}
	pc := lifecycle(t, p, rabbitmq.TypePolicy, pin, ev+"/dead-lettering", nil)
	pNew := resource.Properties{"vhost": vhost, "name": "dead-lettering", "pattern": `^orders\.`,
		"definition": map[string]any{"dead-letter-exchange": "dlx", "max-length": json.Number("5")}}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypePolicy, PhysicalID: pc.PhysicalID, Old: pin, New: pNew,
		Changed: []string{"applyTo", "definition", "pattern", "priority"}}); err != nil {
		t.Fatalf("update policy: %v", err)
	}
	if r, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypePolicy, PhysicalID: pc.PhysicalID, Properties: pNew}); err != nil {
		t.Errorf("read updated policy: %v", err)
	} else if diff := cmp.Diff(pNew, r.Properties); diff != "" {
		t.Errorf("read updated policy (-want +got):\n%s", diff)
	}
	bad := resource.Properties{"vhost": vhost, "name": "bad", "pattern": ".*", "definition": map[string]any{"bogus-key": "x"}}
	_, err = p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypePolicy, Properties: bad})
	if pe := (*resource.ProviderError)(nil); !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, `<<"bogus-key">>`) {
		t.Errorf("create a bad policy = %v, want 400 naming bogus-key", err)
	} else {
		t.Logf("bad policy: %v", err)
	}

	// User: the password works; a tags-only update keeps it; a password update changes it.
	uin := resource.Properties{"name": user, "password": "first-pass", "tags": []any{"management"}}
	uc := lifecycle(t, p, rabbitmq.TypeUser, uin, user, resource.Properties{"name": user, "tags": []any{"management"}})
	login := func(pass string) int {
		status, _, _ := raw(t, "GET", "/whoami", user, pass, nil)
		return status
	}
	if got := login("first-pass"); got != 200 {
		t.Errorf("login with the first password = %d, want 200", got)
	}
	uTags := resource.Properties{"name": user, "password": "fingerprint-not-a-password", "tags": []any{"management", "monitoring"}}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: uc.PhysicalID, Old: uin, New: uTags, Changed: []string{"tags"}}); err != nil {
		t.Fatalf("update user tags: %v", err)
	}
	if got := login("first-pass"); got != 200 {
		t.Errorf("login after a tags-only update = %d, want 200 (the password must be kept)", got)
	}
	if r, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeUser, PhysicalID: user, Properties: uTags}); err != nil {
		t.Errorf("read user: %v", err)
	} else if diff := cmp.Diff(resource.Properties{"name": user, "tags": []any{"management", "monitoring"}}, r.Properties); diff != "" {
		t.Errorf("read user after tags update (-want +got):\n%s", diff)
	}
	uPass := resource.Properties{"name": user, "password": "second-pass", "tags": []any{"management", "monitoring"}}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: user, Old: uTags, New: uPass, Changed: []string{"password"}}); err != nil {
		t.Fatalf("update user password: %v", err)
	}
	if old, cur := login("first-pass"), login("second-pass"); old != 401 || cur != 200 {
		t.Errorf("login after a password update: old %d (want 401), new %d (want 200)", old, cur)
	}

	// Permission: the new user's, and cdkx's own, which RabbitMQ granted with the vhost.
	permIn := resource.Properties{"vhost": vhost, "user": uc.Outputs["name"], "configure": `^orders\.`, "write": ".*", "read": ".*"}
	permC := lifecycle(t, p, rabbitmq.TypePermission, permIn, ev+"/"+url.PathEscape(user), nil)
	permNew := resource.Properties{"vhost": vhost, "user": user, "configure": "", "write": "^orders$", "read": `^orders\.`}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: rabbitmq.TypePermission, PhysicalID: permC.PhysicalID, Old: permIn, New: permNew,
		Changed: []string{"configure", "read", "write"}}); err != nil {
		t.Fatalf("update permission: %v", err)
	}
	if r, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypePermission, PhysicalID: permC.PhysicalID, Properties: permNew}); err != nil {
		t.Errorf("read permission: %v", err)
	} else if diff := cmp.Diff(permNew, r.Properties); diff != "" {
		t.Errorf("read updated permission (-want +got):\n%s", diff)
	}
	self := resource.Properties{"vhost": vhost, "user": os.Getenv("RABBITMQ_USERNAME"), "configure": ".*", "write": ".*", "read": ".*"}
	if _, err := p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypePermission, Properties: self}); !errors.Is(err, resource.ErrAlreadyExists) {
		t.Errorf("create a permission for cdkx's own user on its new vhost = %v, want ErrAlreadyExists", err)
	}
	_, err = p.Create(ctx, resource.CreateRequest{Type: rabbitmq.TypePermission, Properties: resource.Properties{"vhost": vhost, "user": unique(t),
		"configure": ".*", "write": ".*", "read": ".*"}})
	if pe := (*resource.ProviderError)(nil); !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, "does not exist") {
		t.Errorf("create a permission for a missing user = %v, want 400 … does not exist", err)
	}

	// Deleting one binding, then again.
	for range 2 {
		if err := p.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeBinding, PhysicalID: oc.PhysicalID}); err != nil {
			t.Errorf("delete binding: %v", err)
		}
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeBinding, PhysicalID: oc.PhysicalID}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("read a deleted binding = %v, want ErrNotFound", err)
	}

	// The vhost cascade: deleting the vhost deletes everything in it; deleting each afterwards is done.
	if err := p.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: vhost}); err != nil {
		t.Fatalf("delete vhost: %v", err)
	}
	children := []struct{ typ, id string }{
		{rabbitmq.TypeBinding, bc.PhysicalID}, {rabbitmq.TypeBinding, dlxBinding.PhysicalID},
		{rabbitmq.TypeExchange, xc.PhysicalID}, {rabbitmq.TypeExchange, dlx.PhysicalID},
		{rabbitmq.TypeQueue, qc.PhysicalID}, {rabbitmq.TypePolicy, pc.PhysicalID}, {rabbitmq.TypePermission, permC.PhysicalID},
		{rabbitmq.TypeVirtualHost, vhost},
	}
	for _, c := range children {
		if _, err := p.Read(ctx, resource.ReadRequest{Type: c.typ, PhysicalID: c.id}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read %s %s after the vhost was deleted = %v, want ErrNotFound", c.typ, c.id, err)
		}
		if err := p.Delete(ctx, resource.DeleteRequest{Type: c.typ, PhysicalID: c.id}); err != nil {
			t.Errorf("delete %s %s after the vhost was deleted = %v, want success", c.typ, c.id, err)
		}
		if _, err := p.Locate(ctx, resource.CreateRequest{Type: c.typ, Properties: map[string]resource.Properties{
			rabbitmq.TypeBinding: bin, rabbitmq.TypeExchange: xin, rabbitmq.TypeQueue: qin, rabbitmq.TypePolicy: pin,
			rabbitmq.TypePermission: permIn, rabbitmq.TypeVirtualHost: vin}[c.typ]}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate %s after the vhost was deleted = %v, want ErrNotFound", c.typ, err)
		}
	}
	for range 2 {
		if err := p.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeUser, PhysicalID: user}); err != nil {
			t.Errorf("delete user: %v", err)
		}
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeUser, PhysicalID: user}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("read a deleted user = %v, want ErrNotFound", err)
	}
	t.Logf("lifecycle of every type took %s", time.Since(start).Round(time.Millisecond))
}

func TestE2EErrors(t *testing.T) {
	e2eProvider(t)
	ctx := t.Context()
	wrong, err := rabbitmq.New(rabbitmq.Config{URL: os.Getenv("RABBITMQ_API_URL"), Username: os.Getenv("RABBITMQ_USERNAME"), Password: "wrong-password"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "/"})
	if pe := (*resource.ProviderError)(nil); !errors.As(err, &pe) || pe.Status != 401 ||
		!strings.HasSuffix(err.Error(), ": 401: Login failed: check RABBITMQ_USERNAME and RABBITMQ_PASSWORD") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("read with a wrong password = %v, want 401 Login failed: check …", err)
	} else {
		t.Logf("wrong password: %v", err)
	}

	prefix, err := rabbitmq.New(rabbitmq.Config{URL: os.Getenv("RABBITMQ_API_URL") + "/not-the-api", Username: os.Getenv("RABBITMQ_USERNAME"),
		Password: os.Getenv("RABBITMQ_PASSWORD")})
	if err != nil {
		t.Fatal(err)
	}
	// Outside /api the broker answers 406 to a GET that accepts only JSON, and 405 to a DELETE, with no
	// body: never taken for a deleted object.
	_, err = prefix.Read(ctx, resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "gone"})
	if err == nil || errors.Is(err, resource.ErrNotFound) || !strings.Contains(err.Error(), "check that RABBITMQ_API_URL is its base URL") {
		t.Errorf("read through a wrong URL = %v, want an error naming RABBITMQ_API_URL", err)
	} else {
		t.Logf("wrong URL, read: %v", err)
	}
	err = prefix.Delete(ctx, resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "gone"})
	if err == nil || errors.Is(err, resource.ErrNotFound) || !strings.Contains(err.Error(), "check that RABBITMQ_API_URL is its base URL") {
		t.Errorf("delete through a wrong URL = %v, want an error naming RABBITMQ_API_URL", err)
	} else {
		t.Logf("wrong URL, delete: %v", err)
	}
}

// TestE2EExampleMessaging deploys the RabbitMQ resources of testdata/examples/messaging in dependency
// order, resolving {ref, attr} tokens from the outputs of what it created (a stand-in for the engine),
// reads each back, and destroys them in reverse order.
func TestE2EExampleMessaging(t *testing.T) {
	p := e2eProvider(t)
	ctx := t.Context()
	a, ds := assembly.Load("../../testdata/examples/messaging/cdkx.out")
	if len(ds) != 0 {
		t.Fatalf("Load: %v", ds)
	}
	s := a.Stacks[0]
	outputs := map[string]resource.Properties{}
	var resolve func(v any) any
	resolve = func(v any) any {
		if tok, ok := assembly.AsToken(v); ok {
			return outputs[tok.Ref][tok.Attr]
		}
		switch v := v.(type) {
		case map[string]any:
			m := map[string]any{}
			for k, e := range v {
				m[k] = resolve(e)
			}
			return m
		case []any:
			l := make([]any, len(v))
			for i, e := range v {
				l[i] = resolve(e)
			}
			return l
		}
		return v
	}
	type created struct{ typ, id string }
	var done []created
	t.Cleanup(func() {
		for i := len(done) - 1; i >= 0; i-- {
			_ = p.Delete(context.Background(), resource.DeleteRequest{Type: done[i].typ, PhysicalID: done[i].id})
		}
	})
	start := time.Now()
	for len(outputs) < len(s.Resources) {
		progress := false
		for _, r := range s.Resources {
			if _, ok := outputs[r.LogicalID]; ok {
				continue
			}
			ready := true
			for _, d := range r.DependsOn {
				_, ok := outputs[d]
				ready = ready && ok
			}
			if !ready {
				continue
			}
			progress = true
			if r.Provider != rabbitmq.Name {
				outputs[r.LogicalID] = resource.Properties{"output": resolve(r.Properties["input"])}
				continue
			}
			in := resolve(r.Properties).(map[string]any)
			c, err := p.Create(ctx, resource.CreateRequest{Type: r.Type, LogicalID: r.LogicalID, Properties: in})
			if err != nil {
				t.Fatalf("create %s: %v", r.LogicalID, err)
			}
			done = append(done, created{r.Type, c.PhysicalID})
			outputs[r.LogicalID] = c.Outputs
			got, err := p.Read(ctx, resource.ReadRequest{Type: r.Type, PhysicalID: c.PhysicalID, Properties: in})
			if err != nil {
				t.Fatalf("read %s: %v", r.LogicalID, err)
			}
			if r.Type == rabbitmq.TypeUser {
				delete(in, "password")
			}
			if !resource.Equal(map[string]any(in), map[string]any(got.Properties)) {
				t.Errorf("read %s = %s, want %s", r.LogicalID, resource.Canonical(got.Properties), resource.Canonical(in))
			}
		}
		if !progress {
			t.Fatal("dependency cycle in the example")
		}
	}
	t.Logf("deployed %d resources in %s", len(done), time.Since(start).Round(time.Millisecond))
	// The order service logs in with the password of the template (GET /api/vhosts/app would need the
	// administrator tag).
	status, _, who := raw(t, "GET", "/whoami", "order-service", "order-service-e2e-pass", nil)
	if status != 200 || who["name"] != "order-service" {
		t.Errorf("order-service GET /api/whoami = %d %v, want 200", status, who)
	}
	for i := len(done) - 1; i >= 0; i-- {
		if err := p.Delete(ctx, resource.DeleteRequest{Type: done[i].typ, PhysicalID: done[i].id}); err != nil {
			t.Errorf("delete %s %s: %v", done[i].typ, done[i].id, err)
		}
	}
	done = nil
	t.Logf("deployed and destroyed in %s", time.Since(start).Round(time.Millisecond))
}
