package rabbitmq_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Canned answers of GET, as RabbitMQ 3.10.8 sends them.
const (
	vhostJSON = `{"name":"app","description":"Orders","tags":["team-a","prod"],"default_queue_type":"quorum",
		"metadata":{"description":"Orders","tags":["team-a","prod"]},"tracing":false,"cluster_state":{"rabbit@localhost":"running"}}`
	bareVhostJSON = `{"name":"app","description":"","tags":[],"default_queue_type":"undefined",
		"metadata":{"description":"","tags":[]},"tracing":false,"cluster_state":{"rabbit@localhost":"running"}}`
	exchangeJSON = `{"arguments":{},"auto_delete":false,"durable":true,"incoming":[],"internal":false,"name":"orders",
		"outgoing":[],"type":"topic","user_who_performed_action":"admin","vhost":"/"}`
	queueJSON = `{"consumer_details":[],"arguments":{"x-queue-type":"quorum"},"auto_delete":false,"deliveries":[],"durable":true,
		"exclusive":false,"incoming":[],"name":"orders.created","node":"rabbit@localhost","type":"quorum","vhost":"app"}`
	userJSON = `{"name":"order-service","password_hash":"VQwbveGlt1brOD5KPWUw3cNDSuKCC6j9CX2VTmMpcPYKw6Y9",
		"hashing_algorithm":"rabbit_password_hashing_sha256","tags":["management","monitoring"],"limits":{}}`
	permissionJSON = `{"user":"order-service","vhost":"app","configure":"^orders\\.","write":".*","read":".*"}`
	policyJSON     = `{"vhost":"app","name":"dlx","pattern":"^orders\\.created$","apply-to":"queues","definition":{"dead-letter-exchange":"dlx"},"priority":1}`
)

func TestVhostCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, props, body string
	}{
		{"defaults", `{"name":"app"}`, `{"description":"","tags":""}`},
		{"every property", `{"name":"app","description":"Orders","tags":["team-a","prod"],"defaultQueueType":"quorum"}`,
			`{"description":"Orders","tags":"team-a,prod","default_queue_type":"quorum","defaultqueuetype":"quorum"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, get404("/api/vhosts/app"), exchange{Method: "PUT", Path: "/api/vhosts/app", Body: tt.body, Status: 201})
			got, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeVirtualHost, Properties: adaptertest.Props(t, tt.props)})
			if err != nil {
				t.Fatalf("Create = %v", err)
			}
			want := resource.CreateResult{PhysicalID: "app", Outputs: resource.Properties{"name": "app"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVhostCreateExisting(t *testing.T) {
	t.Parallel()
	_, p := newFake(t, exchange{Method: "GET", Path: "/api/vhosts/%2F", Status: 200, JSON: strings.Replace(bareVhostJSON, `"app"`, `"/"`, 1)})
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeVirtualHost, Properties: adaptertest.Props(t, `{"name":"/"}`)})
	if !errors.Is(err, resource.ErrAlreadyExists) {
		t.Fatalf("Create error = %v, want resource.ErrAlreadyExists", err)
	}
	if want := `rabbitmq: vhost "/" already exists in RabbitMQ but not in cdkx state; delete it in RabbitMQ or import it into cdkx: object already exists`; err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestVhostRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hint, live, want string
	}{
		{"defaults left out", `{"name":"app"}`, bareVhostJSON, `{"name":"app"}`},
		{"defaults the template sets", `{"name":"app","description":"","tags":[]}`, bareVhostJSON, `{"name":"app","description":"","tags":[]}`},
		{"tags in the template's order", `{"name":"app","tags":["prod","team-a"],"defaultQueueType":"quorum","description":"Orders"}`, vhostJSON,
			`{"name":"app","description":"Orders","tags":["prod","team-a"],"defaultQueueType":"quorum"}`},
		{"drift shows", `{"name":"app"}`, vhostJSON, `{"name":"app","description":"Orders","tags":["team-a","prod"],"defaultQueueType":"quorum"}`},
		{"tags as a string (3.8)", `{"name":"app","tags":["a","b"]}`, strings.Replace(bareVhostJSON, `"tags":[]`, `"tags":"a,b"`, 1),
			`{"name":"app","tags":["a","b"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, exchange{Method: "GET", Path: "/api/vhosts/app", Status: 200, JSON: tt.live})
			got, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app", Properties: adaptertest.Props(t, tt.hint)})
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			want := resource.ReadResult{Properties: adaptertest.Props(t, tt.want), Outputs: resource.Properties{"name": "app"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVhostUpdate(t *testing.T) {
	t.Parallel()
	old := adaptertest.Props(t, `{"name":"app","description":"Orders","tags":["team-a"]}`)
	t.Run("metadata", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "PUT", Path: "/api/vhosts/app", Body: `{"description":"","tags":"x,y"}`, Status: 204})
		got, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app", Old: old,
			New: adaptertest.Props(t, `{"name":"app","tags":["x","y"]}`), Changed: []string{"description", "tags"}})
		if err != nil {
			t.Fatalf("Update = %v", err)
		}
		if diff := cmp.Diff(resource.UpdateResult{Outputs: resource.Properties{"name": "app"}}, got); diff != "" {
			t.Errorf("Update mismatch (-want +got):\n%s", diff)
		}
	})
	const body = `{"description":"Orders","tags":"team-a","default_queue_type":"quorum","defaultqueuetype":"quorum"}`
	newProps := `{"name":"app","description":"Orders","tags":["team-a"],"defaultQueueType":"quorum"}`
	t.Run("default queue type", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t,
			exchange{Method: "PUT", Path: "/api/vhosts/app", Body: body, Status: 204},
			exchange{Method: "GET", Path: "/api/vhosts/app", Status: 200, JSON: vhostJSON})
		if _, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app", Old: old,
			New: adaptertest.Props(t, newProps), Changed: []string{"defaultQueueType"}}); err != nil {
			t.Fatalf("Update = %v", err)
		}
	})
	t.Run("default queue type kept by RabbitMQ 3.10", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t,
			exchange{Method: "PUT", Path: "/api/vhosts/app", Body: body, Status: 204},
			exchange{Method: "GET", Path: "/api/vhosts/app", Status: 200, JSON: bareVhostJSON})
		_, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app", Old: old,
			New: adaptertest.Props(t, newProps), Changed: []string{"defaultQueueType"}})
		if err == nil || !strings.Contains(err.Error(), `vhost "app" kept its default queue type none instead of quorum`) {
			t.Errorf("Update error = %v, want a kept default queue type", err)
		}
	})
	t.Run("default queue type removed", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t) // no request
		_, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app",
			Old: adaptertest.Props(t, newProps), New: old, Changed: []string{"defaultQueueType"}})
		if err == nil || !strings.Contains(err.Error(), "defaultQueueType cannot be removed") {
			t.Errorf("Update error = %v, want cannot be removed", err)
		}
	})
}

func TestVhostDelete(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: "/api/vhosts/a%2Fb", Status: 204},
		exchange{Method: "DELETE", Path: "/api/vhosts/a%2Fb", Status: 404, JSON: notFoundJSON},
		whoami,
	)
	for i := range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "a/b"}); err != nil {
			t.Errorf("Delete #%d = %v, want success", i+1, err)
		}
	}
}

func TestExchangeCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, props, body string
	}{
		{"defaults", `{"vhost":"/","name":"orders","type":"topic"}`,
			`{"type":"topic","durable":true,"auto_delete":false,"internal":false,"arguments":{}}`},
		{"every property", `{"vhost":"/","name":"orders","type":"x-delayed-message","durable":false,"autoDelete":true,"internal":true,"arguments":{"x-delayed-type":"direct"}}`,
			`{"type":"x-delayed-message","durable":false,"auto_delete":true,"internal":true,"arguments":{"x-delayed-type":"direct"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, get404("/api/exchanges/%2F/orders"),
				exchange{Method: "PUT", Path: "/api/exchanges/%2F/orders", Body: tt.body, Status: 201})
			got, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeExchange, Properties: adaptertest.Props(t, tt.props)})
			if err != nil {
				t.Fatalf("Create = %v", err)
			}
			want := resource.CreateResult{PhysicalID: "%2F/orders", Outputs: resource.Properties{"vhost": "/", "name": "orders"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExchangeCreateErrors(t *testing.T) {
	t.Parallel()
	const body = `{"type":"fanout","durable":true,"auto_delete":false,"internal":false,"arguments":{}}`
	const inequivalent = "inequivalent arg 'type' for exchange 'orders' in vhost 'app': received 'fanout' but current is 'topic'"
	tests := []struct {
		name    string
		answers []exchange
		want    string
		kind    error
	}{
		{"exists", []exchange{{Method: "GET", Path: "/api/exchanges/app/orders", Status: 200, JSON: exchangeJSON}},
			`rabbitmq: exchange "orders" in vhost "app" already exists in RabbitMQ but not in cdkx state; delete it in RabbitMQ or import it into cdkx: object already exists`,
			resource.ErrAlreadyExists},
		{"inequivalent (declared in between)", []exchange{get404("/api/exchanges/app/orders"),
			{Method: "PUT", Path: "/api/exchanges/app/orders", Body: body, Status: 400, JSON: `{"error":"bad_request","reason":"` + inequivalent + `"}`}},
			"400: " + inequivalent, nil},
		{"no vhost", []exchange{get404("/api/exchanges/app/orders"),
			{Method: "PUT", Path: "/api/exchanges/app/orders", Body: body, Status: 404, JSON: `{"error":"not_found","reason":"vhost_not_found"}`}},
			`404: vhost "app" does not exist`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, tt.answers...)
			_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeExchange, Properties: adaptertest.Props(t, `{"vhost":"app","name":"orders","type":"fanout"}`)})
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("Create error = %v, want suffix %q", err, tt.want)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) || tt.kind == nil && errors.Is(err, resource.ErrNotFound) {
				t.Errorf("Create error = %v, want kind %v", err, tt.kind)
			}
		})
	}
}

func TestExchangeRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hint, live, want string
	}{
		{"defaults left out", `{"vhost":"/","name":"orders","type":"topic"}`, exchangeJSON, `{"vhost":"/","name":"orders","type":"topic"}`},
		{"set defaults kept", `{"vhost":"/","name":"orders","type":"topic","durable":true,"autoDelete":false,"internal":false,"arguments":{}}`, exchangeJSON,
			`{"vhost":"/","name":"orders","type":"topic","durable":true,"autoDelete":false,"internal":false,"arguments":{}}`},
		{"drift shows", `{"vhost":"/","name":"orders","type":"topic"}`,
			strings.NewReplacer(`"durable":true`, `"durable":false`, `"arguments":{}`, `"arguments":{"alternate-exchange":"u","x-n":5}`).Replace(exchangeJSON),
			`{"vhost":"/","name":"orders","type":"topic","durable":false,"arguments":{"alternate-exchange":"u","x-n":5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, exchange{Method: "GET", Path: "/api/exchanges/%2F/orders", Status: 200, JSON: tt.live})
			got, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeExchange, PhysicalID: "%2F/orders", Properties: adaptertest.Props(t, tt.hint)})
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			want := resource.ReadResult{Properties: adaptertest.Props(t, tt.want), Outputs: resource.Properties{"vhost": "/", "name": "orders"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExchangeReadGone(t *testing.T) {
	t.Parallel()
	_, p := newFake(t, exchange{Method: "GET", Path: "/api/exchanges/app/orders", Status: 404, JSON: notFoundJSON}, whoami)
	if _, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeExchange, PhysicalID: "app/orders"}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("Read error = %v, want resource.ErrNotFound", err)
	}
}

func TestCreateOnlyTypesUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ, id string
		outputs resource.Properties
	}{
		{rabbitmq.TypeExchange, "app/orders", resource.Properties{"vhost": "app", "name": "orders"}},
		{rabbitmq.TypeQueue, "%2F/orders.created", resource.Properties{"vhost": "/", "name": "orders.created"}},
		{rabbitmq.TypeBinding, "app/orders/queue/orders.created/order.created", resource.Properties{"vhost": "app", "propertiesKey": "order.created"}},
	}
	_, p := newFake(t) // no request
	for _, tt := range tests {
		got, err := p.Update(t.Context(), resource.UpdateRequest{Type: tt.typ, PhysicalID: tt.id})
		if err != nil {
			t.Errorf("Update(%s) without changes = %v", tt.typ, err)
		}
		if diff := cmp.Diff(resource.UpdateResult{Outputs: tt.outputs}, got); diff != "" {
			t.Errorf("Update(%s) mismatch (-want +got):\n%s", tt.typ, diff)
		}
		_, err = p.Update(t.Context(), resource.UpdateRequest{Type: tt.typ, PhysicalID: tt.id, Changed: []string{"arguments"}})
		if err == nil || !strings.Contains(err.Error(), "cannot change in place (changed: arguments); every property is create-only") {
			t.Errorf("Update(%s) with changes = %v, want an error", tt.typ, err)
		}
	}
}

func TestExchangeDelete(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: "/api/exchanges/app/a%2Fb%20c", Status: 204},
		// Gone with its vhost.
		exchange{Method: "DELETE", Path: "/api/exchanges/app/a%2Fb%20c", Status: 404, JSON: notFoundJSON},
		whoami,
	)
	for i := range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeExchange, PhysicalID: "app/a%2Fb%20c"}); err != nil {
			t.Errorf("Delete #%d = %v, want success", i+1, err)
		}
	}
}

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	const path = "/api/queues/app/orders.created"
	_, p := newFake(t,
		get404(path),
		exchange{Method: "PUT", Path: path, Body: `{"durable":true,"auto_delete":false,"arguments":{"x-max-length":10000}}`, Status: 201},
		// In a vhost whose default queue type is quorum, RabbitMQ adds x-queue-type.
		exchange{Method: "GET", Path: path, Status: 200, JSON: strings.Replace(queueJSON, `{"x-queue-type":"quorum"}`, `{"x-queue-type":"quorum","x-max-length":10000}`, 1)},
		exchange{Method: "GET", Path: path, Status: 200, JSON: queueJSON},
		exchange{Method: "DELETE", Path: path, Status: 204},
		exchange{Method: "DELETE", Path: path, Status: 404, JSON: notFoundJSON},
		whoami,
	)
	in := adaptertest.Props(t, `{"vhost":"app","name":"orders.created","arguments":{"x-max-length":10000}}`)
	c, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeQueue, Properties: in})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	want := resource.CreateResult{PhysicalID: "app/orders.created", Outputs: resource.Properties{"vhost": "app", "name": "orders.created"}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Create mismatch (-want +got):\n%s", diff)
	}
	r, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeQueue, PhysicalID: c.PhysicalID, Properties: in})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(in, r.Properties); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
	// Without the hint (e.g. an import), the live arguments show as they are.
	r, err = p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeQueue, PhysicalID: c.PhysicalID})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(adaptertest.Props(t, `{"vhost":"app","name":"orders.created","arguments":{"x-queue-type":"quorum"}}`), r.Properties); diff != "" {
		t.Errorf("Read without hint mismatch (-want +got):\n%s", diff)
	}
	for range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeQueue, PhysicalID: c.PhysicalID}); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
}

func TestQueueCreateInequivalent(t *testing.T) {
	t.Parallel()
	const reason = "inequivalent arg 'x-queue-type' for queue 'q' in vhost 'app': received the value 'quorum' of type 'longstr' but current is none"
	_, p := newFake(t, get404("/api/queues/app/q"),
		exchange{Method: "PUT", Path: "/api/queues/app/q", Body: `{"durable":true,"auto_delete":false,"arguments":{"x-queue-type":"quorum"}}`,
			Status: 400, JSON: `{"error":"bad_request","reason":"` + reason + `"}`})
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeQueue, Properties: adaptertest.Props(t, `{"vhost":"app","name":"q","arguments":{"x-queue-type":"quorum"}}`)})
	if pe := adaptertest.ProviderError(t, err); pe.Status != 400 || pe.Message != reason {
		t.Errorf("error = %v, want 400 %s", err, reason)
	}
}

const (
	bindingsURL = "/api/bindings/app/e/orders/q/orders.created"
	bindingJSON = `{"source":"orders","vhost":"app","destination":"orders.created","destination_type":"queue","routing_key":"order.created","arguments":{},"properties_key":"order.created"}`
)

func TestBindingCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, props, url, body, location, wantID, wantKey string
	}{
		{"queue", `{"vhost":"app","source":"orders","destination":"orders.created","routingKey":"order.created"}`,
			bindingsURL, `{"routing_key":"order.created","arguments":{}}`, "orders.created/order.created",
			"app/orders/queue/orders.created/order.created", "order.created"},
		{"escaped key", `{"vhost":"/","source":"orders","destination":"a/b c","destinationType":"exchange","routingKey":"a b/c~d%","arguments":{"x-match":"all"}}`,
			"/api/bindings/%2F/e/orders/e/a%2Fb%20c", `{"routing_key":"a b/c~d%","arguments":{"x-match":"all"}}`,
			"a%2Fb+c/a%2Bb%252Fc%257Ed%2525~3ujGfg",
			"%2F/orders/exchange/a%2Fb%20c/a+b%252Fc%257Ed%2525~3ujGfg", "a+b%2Fc%7Ed%25~3ujGfg"},
		{"empty routing key", `{"vhost":"app","source":"orders","destination":"orders.created"}`,
			bindingsURL, `{"routing_key":"","arguments":{}}`, "http://127.0.0.1:15672/api/bindings/app/e/orders/q/orders.created/~",
			"app/orders/queue/orders.created/~", "~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t,
				exchange{Method: "GET", Path: tt.url, Status: 200, JSON: `[]`},
				exchange{Method: "POST", Path: tt.url, Body: tt.body, Status: 201, Header: map[string]string{"Location": tt.location}})
			got, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeBinding, Properties: adaptertest.Props(t, tt.props)})
			if err != nil {
				t.Fatalf("Create = %v", err)
			}
			vhost, _ := adaptertest.Props(t, tt.props)["vhost"].(string)
			want := resource.CreateResult{PhysicalID: tt.wantID, Outputs: resource.Properties{"vhost": vhost, "propertiesKey": tt.wantKey}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindingCreateErrors(t *testing.T) {
	t.Parallel()
	const in = `{"vhost":"app","source":"orders","destination":"orders.created","routingKey":"order.created"}`
	const body = `{"routing_key":"order.created","arguments":{}}`
	other := strings.NewReplacer(`"routing_key":"order.created"`, `"routing_key":"other"`, `"properties_key":"order.created"`, `"properties_key":"other"`).Replace(bindingJSON)
	tests := []struct {
		name    string
		answers []exchange
		want    string
		kind    error
	}{
		{"exists", []exchange{{Method: "GET", Path: bindingsURL, Status: 200, JSON: "[" + other + "," + bindingJSON + "]"}},
			`binding from exchange "orders" to queue "orders.created" with routing key "order.created" in vhost "app" already exists in RabbitMQ but not in cdkx state`,
			resource.ErrAlreadyExists},
		{"no source", []exchange{{Method: "GET", Path: bindingsURL, Status: 200, JSON: "[]"},
			{Method: "POST", Path: bindingsURL, Body: body, Status: 404, JSON: `{"error":"not_found","reason":"no exchange 'orders' in vhost 'app'"}`}},
			"404: no exchange 'orders' in vhost 'app'", nil},
		{"no vhost", []exchange{{Method: "GET", Path: bindingsURL, Status: 404, JSON: notFoundJSON},
			{Method: "POST", Path: bindingsURL, Body: body, Status: 404, JSON: `{"error":"not_found","reason":"vhost_not_found"}`}},
			`404: vhost "app" does not exist`, nil},
		{"no Location", []exchange{{Method: "GET", Path: bindingsURL, Status: 200, JSON: "[" + other + "]"},
			{Method: "POST", Path: bindingsURL, Body: body, Status: 201}},
			"the response has no Location header with the binding's properties key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, tt.answers...)
			_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeBinding, Properties: adaptertest.Props(t, in)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Create error = %v, want %q", err, tt.want)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) || tt.kind == nil && errors.Is(err, resource.ErrNotFound) {
				t.Errorf("Create error = %v, want kind %v", err, tt.kind)
			}
		})
	}
}

func TestBindingReadDeleteLocate(t *testing.T) {
	t.Parallel()
	const id = "app/orders/queue/orders.created/order.created~3ujGfg"
	const one = bindingsURL + "/order.created~3ujGfg"
	live := strings.NewReplacer(`"arguments":{}`, `"arguments":{"x-match":"all"}`, `"properties_key":"order.created"`, `"properties_key":"order.created~3ujGfg"`).Replace(bindingJSON)
	in := adaptertest.Props(t, `{"vhost":"app","source":"orders","destination":"orders.created","routingKey":"order.created","arguments":{"x-match":"all"}}`)
	_, p := newFake(t,
		exchange{Method: "GET", Path: one, Status: 200, JSON: live},
		exchange{Method: "GET", Path: bindingsURL, Status: 200, JSON: "[" + bindingJSON + "," + live + "]"},
		exchange{Method: "DELETE", Path: one, Status: 204},
		// Deleted with its queue, exchange or vhost.
		exchange{Method: "DELETE", Path: one, Status: 404, JSON: notFoundJSON},
		whoami,
		exchange{Method: "GET", Path: one, Status: 404, JSON: notFoundJSON},
		exchange{Method: "GET", Path: bindingsURL, Status: 200, JSON: "[" + bindingJSON + "]"},
	)
	r, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeBinding, PhysicalID: id, Properties: in})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	want := resource.ReadResult{Properties: in, Outputs: resource.Properties{"vhost": "app", "propertiesKey": "order.created~3ujGfg"}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
	if got, err := p.Locate(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeBinding, Properties: in}); err != nil || got != id {
		t.Errorf("Locate = %q, %v, want %q", got, err, id)
	}
	for range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeBinding, PhysicalID: id}); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
	if _, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeBinding, PhysicalID: id}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("Read of a deleted binding = %v, want ErrNotFound", err)
	}
	if _, err := p.Locate(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeBinding, Properties: in}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("Locate of a deleted binding = %v, want ErrNotFound", err)
	}
}

func TestUserCreateRead(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		get404("/api/users/order-service"),
		exchange{Method: "PUT", Path: "/api/users/order-service", Body: `{"password":"pw-1","tags":"management,monitoring"}`, Status: 201},
		exchange{Method: "GET", Path: "/api/users/order-service", Status: 200, JSON: userJSON},
	)
	in := adaptertest.Props(t, `{"name":"order-service","password":"pw-1","tags":["management","monitoring"]}`)
	c, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeUser, Properties: in})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	if diff := cmp.Diff(resource.CreateResult{PhysicalID: "order-service", Outputs: resource.Properties{"name": "order-service"}}, c); diff != "" {
		t.Errorf("Create mismatch (-want +got):\n%s", diff)
	}
	// State holds a fingerprint in place of the password; Read never reports one.
	hint := adaptertest.Props(t, `{"name":"order-service","password":"fingerprint:abc","tags":["monitoring","management"]}`)
	r, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service", Properties: hint})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	want := resource.ReadResult{Properties: adaptertest.Props(t, `{"name":"order-service","tags":["monitoring","management"]}`), Outputs: resource.Properties{"name": "order-service"}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
}

func TestUserUpdate(t *testing.T) {
	t.Parallel()
	old := adaptertest.Props(t, `{"name":"order-service","password":"pw-1","tags":["management"]}`)
	t.Run("password changed", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "PUT", Path: "/api/users/order-service", Body: `{"password":"pw-2","tags":"management"}`, Status: 204})
		_, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service", Old: old,
			New: adaptertest.Props(t, `{"name":"order-service","password":"pw-2","tags":["management"]}`), Changed: []string{"password"}})
		if err != nil {
			t.Fatalf("Update = %v", err)
		}
	})
	t.Run("tags only keep the password", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t,
			exchange{Method: "GET", Path: "/api/users/order-service", Status: 200, JSON: userJSON},
			exchange{Method: "PUT", Path: "/api/users/order-service", Status: 204,
				Body: `{"password_hash":"VQwbveGlt1brOD5KPWUw3cNDSuKCC6j9CX2VTmMpcPYKw6Y9","hashing_algorithm":"rabbit_password_hashing_sha256","tags":""}`})
		// The engine may hand the recorded fingerprint as the unchanged password: it is never sent.
		got, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service", Old: old,
			New: adaptertest.Props(t, `{"name":"order-service","password":"fingerprint:abc"}`), Changed: []string{"tags"}})
		if err != nil {
			t.Fatalf("Update = %v", err)
		}
		if diff := cmp.Diff(resource.UpdateResult{Outputs: resource.Properties{"name": "order-service"}}, got); diff != "" {
			t.Errorf("Update mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("user gone", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "GET", Path: "/api/users/order-service", Status: 404, JSON: notFoundJSON})
		_, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service", Old: old,
			New: adaptertest.Props(t, `{"name":"order-service","password":"pw-1"}`), Changed: []string{"tags"}})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("Update error = %v, want ErrNotFound", err)
		}
	})
}

func TestUserDelete(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: "/api/users/order-service", Status: 204},
		exchange{Method: "DELETE", Path: "/api/users/order-service", Status: 404, JSON: notFoundJSON},
		whoami,
	)
	for range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service"}); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
}

func TestPermissionLifecycle(t *testing.T) {
	t.Parallel()
	const path = "/api/permissions/app/order-service"
	in := adaptertest.Props(t, `{"vhost":"app","user":"order-service","configure":"^orders\\.","write":".*","read":".*"}`)
	_, p := newFake(t,
		get404(path),
		exchange{Method: "PUT", Path: path, Body: `{"configure":"^orders\\.","write":".*","read":".*"}`, Status: 201},
		exchange{Method: "GET", Path: path, Status: 200, JSON: permissionJSON},
		exchange{Method: "PUT", Path: path, Body: `{"configure":"","write":".*","read":".*"}`, Status: 204},
		exchange{Method: "DELETE", Path: path, Status: 204},
		// Gone with its vhost or its user.
		exchange{Method: "DELETE", Path: path, Status: 404, JSON: notFoundJSON},
		whoami,
	)
	c, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypePermission, Properties: in})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	if diff := cmp.Diff(resource.CreateResult{PhysicalID: "app/order-service", Outputs: resource.Properties{"vhost": "app", "user": "order-service"}}, c); diff != "" {
		t.Errorf("Create mismatch (-want +got):\n%s", diff)
	}
	r, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypePermission, PhysicalID: c.PhysicalID, Properties: in})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(in, r.Properties); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
	if _, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypePermission, PhysicalID: c.PhysicalID, Old: in,
		New: adaptertest.Props(t, `{"vhost":"app","user":"order-service","configure":"","write":".*","read":".*"}`), Changed: []string{"configure"}}); err != nil {
		t.Fatalf("Update = %v", err)
	}
	for range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypePermission, PhysicalID: c.PhysicalID}); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
}

func TestPermissionCreateErrors(t *testing.T) {
	t.Parallel()
	const path = "/api/permissions/app/nobody"
	in := adaptertest.Props(t, `{"vhost":"app","user":"nobody","configure":".*","write":".*","read":".*"}`)
	t.Run("no user", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, get404(path), exchange{Method: "PUT", Path: path, Body: `{"configure":".*","write":".*","read":".*"}`,
			Status: 400, JSON: `{"error":"bad_request","reason":"vhost_or_user_not_found"}`})
		_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypePermission, Properties: in})
		if pe := adaptertest.ProviderError(t, err); pe.Status != 400 || pe.Message != `vhost_or_user_not_found: vhost "app" or user "nobody" does not exist` {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("granted with the vhost", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "GET", Path: path, Status: 200, JSON: permissionJSON})
		_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypePermission, Properties: in})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "grants the user that creates a vhost full permissions") {
			t.Errorf("error = %v, want ErrAlreadyExists explaining the automatic grant", err)
		}
	})
}

func TestPolicyLifecycle(t *testing.T) {
	t.Parallel()
	const path = "/api/policies/app/dlx"
	in := adaptertest.Props(t, `{"vhost":"app","name":"dlx","pattern":"^orders\\.created$","applyTo":"queues","priority":1,"definition":{"dead-letter-exchange":"dlx"}}`)
	_, p := newFake(t,
		get404(path),
		exchange{Method: "PUT", Path: path, Status: 201,
			Body: `{"pattern":"^orders\\.created$","apply-to":"queues","priority":1,"definition":{"dead-letter-exchange":"dlx"}}`},
		exchange{Method: "GET", Path: path, Status: 200, JSON: policyJSON},
		exchange{Method: "GET", Path: path, Status: 200, JSON: strings.NewReplacer(`"apply-to":"queues"`, `"apply-to":"all"`, `"priority":1`, `"priority":0`).Replace(policyJSON)},
		exchange{Method: "PUT", Path: path, Status: 204,
			Body: `{"pattern":"^orders\\.","apply-to":"all","priority":0,"definition":{"dead-letter-exchange":"dlx","max-length":5}}`},
		exchange{Method: "DELETE", Path: path, Status: 204},
		exchange{Method: "DELETE", Path: path, Status: 404, JSON: notFoundJSON},
		whoami,
	)
	c, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypePolicy, Properties: in})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	if diff := cmp.Diff(resource.CreateResult{PhysicalID: "app/dlx", Outputs: resource.Properties{"vhost": "app", "name": "dlx"}}, c); diff != "" {
		t.Errorf("Create mismatch (-want +got):\n%s", diff)
	}
	r, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypePolicy, PhysicalID: c.PhysicalID, Properties: in})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(in, r.Properties); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
	bare := adaptertest.Props(t, `{"vhost":"app","name":"dlx","pattern":"^orders\\.created$","definition":{"dead-letter-exchange":"dlx"}}`)
	r, err = p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypePolicy, PhysicalID: c.PhysicalID, Properties: bare})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if diff := cmp.Diff(bare, r.Properties); diff != "" {
		t.Errorf("Read with defaults mismatch (-want +got):\n%s", diff)
	}
	if _, err := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypePolicy, PhysicalID: c.PhysicalID, Old: in,
		New:     adaptertest.Props(t, `{"vhost":"app","name":"dlx","pattern":"^orders\\.","definition":{"dead-letter-exchange":"dlx","max-length":5}}`),
		Changed: []string{"applyTo", "definition", "pattern", "priority"}}); err != nil {
		t.Fatalf("Update = %v", err)
	}
	for range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypePolicy, PhysicalID: c.PhysicalID}); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ, props, path, json, want string
	}{
		{rabbitmq.TypeVirtualHost, `{"name":"app"}`, "/api/vhosts/app", bareVhostJSON, "app"},
		{rabbitmq.TypeExchange, `{"vhost":"/","name":"orders","type":"topic"}`, "/api/exchanges/%2F/orders", exchangeJSON, "%2F/orders"},
		{rabbitmq.TypeQueue, `{"vhost":"app","name":"orders.created"}`, "/api/queues/app/orders.created", queueJSON, "app/orders.created"},
		{rabbitmq.TypeUser, `{"name":"order-service","password":"x"}`, "/api/users/order-service", userJSON, "order-service"},
		{rabbitmq.TypePermission, `{"vhost":"app","user":"order-service","configure":".*","write":".*","read":".*"}`, "/api/permissions/app/order-service", permissionJSON, "app/order-service"},
		{rabbitmq.TypePolicy, `{"vhost":"app","name":"dlx","pattern":".*","definition":{"a":1}}`, "/api/policies/app/dlx", policyJSON, "app/dlx"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t,
				exchange{Method: "GET", Path: tt.path, Status: 200, JSON: tt.json},
				exchange{Method: "GET", Path: tt.path, Status: 404, JSON: notFoundJSON},
				whoami)
			req := resource.CreateRequest{Type: tt.typ, Properties: adaptertest.Props(t, tt.props)}
			if got, err := p.Locate(t.Context(), req); err != nil || got != tt.want {
				t.Errorf("Locate = %q, %v, want %q", got, err, tt.want)
			}
			if _, err := p.Locate(t.Context(), req); !errors.Is(err, resource.ErrNotFound) {
				t.Errorf("Locate of a missing object = %v, want ErrNotFound", err)
			}
		})
	}
}
