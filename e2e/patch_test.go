//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdPdnspatch changes a record set at PowerDNS behind cdkx's back, as a person in its console would:
// `pdnspatch ZONE NAME TYPE TTL CONTENT...` replaces it, `pdnspatch ZONE NAME TYPE 0 DELETE` deletes it.
func cmdPdnspatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 5 {
		ts.Fatalf("usage: pdnspatch ZONE NAME TYPE TTL CONTENT... | pdnspatch ZONE NAME TYPE 0 DELETE")
	}
	ttl, err := strconv.Atoi(args[3])
	ts.Check(err)
	rr := map[string]any{"name": args[1], "type": args[2], "changetype": "REPLACE", "ttl": ttl}
	if args[4] == "DELETE" {
		rr = map[string]any{"name": args[1], "type": args[2], "changetype": "DELETE"}
	} else {
		var records []map[string]any
		for _, c := range args[4:] {
			records = append(records, map[string]any{"content": c, "disabled": false})
		}
		rr["records"] = records
	}
	ts.Check(pdnsOf(ts).patch(args[0], map[string]any{"rrsets": []any{rr}}))
}

func (p pdns) patch(zone string, body any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(p.apiURL, "/") + "/api/v1/servers/" + url.PathEscape(p.serverID) + "/zones/" + url.PathEscape(zone)
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", p.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PATCH zone %s: %d %s", zone, resp.StatusCode, msg)
	}
	return nil
}
