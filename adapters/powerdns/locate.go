package powerdns

import (
	"context"
	"fmt"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Locate returns the physical ID of the object that a create with req.Properties makes, when it exists at
// PowerDNS, or an error wrapping resource.ErrNotFound. PowerDNS names its objects by their inputs — a zone
// by its canonical name (PowerDNS lower-cases it), a record set by zone, name and type — so the engine can
// settle a create that was interrupted between the call and its record (crash recovery). It reads with
// GET /api/v1/servers/{server}/zones/{zone} (https://doc.powerdns.com/authoritative/http-api/zone.html).
func (p *Provider) Locate(ctx context.Context, req resource.CreateRequest) (string, error) {
	var id string
	switch req.Type {
	case TypeZone:
		z, err := decodeZone(req.Properties)
		if err != nil {
			return "", err
		}
		id = strings.ToLower(z.Name)
	case TypeRecordSet:
		r, err := decodeRecordSet(req.Properties)
		if err != nil {
			return "", err
		}
		id = recordSetID(r.ZoneID, r.Name, r.Type)
	default:
		return "", unknownType(req.Type)
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: req.Type, PhysicalID: id, Properties: req.Properties}); err != nil {
		return "", fmt.Errorf("locate %s %s: %w", req.Type, id, err)
	}
	return id, nil
}
