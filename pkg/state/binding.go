package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// SnapshotHash returns the SHA-256 (hex) of a deployment's stored snapshot, "" when it has none: what a
// store records as Deployment.SnapshotHash, and what a run checks before it plans.
func SnapshotHash(snapshot []byte) string {
	if len(snapshot) == 0 {
		return ""
	}
	sum := sha256.Sum256(snapshot)
	return hex.EncodeToString(sum[:])
}

// BindSnapshot sets d.SnapshotHash to the hash of d.Snapshot, computed here, as every store does before it
// records a deployment: a hash given by the caller is never trusted. A given hash ("" is none) that
// disagrees is refused (an error naming both), not overwritten: a client that sends one means its own
// snapshot, and a mismatch says that what it planned is not what it sent. So is a deployment with a
// snapshot and a plan whose Plan.SnapshotHash is not the snapshot's: a plan names what it was made from.
// This guards against a client's mistake, not against a lying client (a store cannot plan): the binding
// guarantee is the run's, which checks the hash and plans the snapshot again before any provider call.
func BindSnapshot(d *Deployment) error {
	h := SnapshotHash(d.Snapshot)
	if d.SnapshotHash != "" && d.SnapshotHash != h {
		return fmt.Errorf("create deployment %s: its snapshotHash %s is not the SHA-256 of its snapshot (%s); send the snapshot's own hash, or none", d.ID, d.SnapshotHash, orNone(h))
	}
	if d.Plan != nil && h != "" && d.Plan.SnapshotHash != h {
		return fmt.Errorf("create deployment %s: its plan was made from snapshot %q, not from its snapshot (%s): plan the snapshot you send, and name its hash in the plan", d.ID, d.Plan.SnapshotHash, h)
	}
	d.SnapshotHash = h
	return nil
}

func orNone(h string) string {
	if h == "" {
		return "it has no snapshot"
	}
	return h
}
