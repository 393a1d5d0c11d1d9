package powerdns

import (
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// zoneID is the physical ID a zone created with props gets: its canonical name, lower-cased as PowerDNS
// does.
func zoneID(props resource.Properties) (string, error) {
	z, err := decodeZone(props)
	if err != nil {
		return "", err
	}
	return strings.ToLower(z.Name), nil
}

// recordSetIDOf is the physical ID a record set created with props gets: zone, name and type.
func recordSetIDOf(props resource.Properties) (string, error) {
	r, err := decodeRecordSet(props)
	if err != nil {
		return "", err
	}
	return recordSetID(r.ZoneID, r.Name, r.Type), nil
}
