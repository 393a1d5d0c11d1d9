package operation

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/secret"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// SnapshotFormat is the format version of Snapshot.
const SnapshotFormat = 1

// Keys of the objects that stand for a sensitive (write-only) value in a snapshot's templates.
const (
	// SealedKey: {"cdkx:sealed": "<base64 of nonce, AES-256-GCM ciphertext and tag>"}, opened with the
	// key derived from CDKX_SECRETS_PASSPHRASE and Snapshot.Salt.
	SealedKey = "cdkx:sealed"
	// RedactedKey: {"cdkx:redacted": true}, the value left out (a deployment run at once by the process
	// that created it, without a passphrase: it never needs the value back).
	RedactedKey = "cdkx:redacted"
)

// Snapshot is what a deployment pins, stored as its state.Deployment.Snapshot (JSON): the whole assembly
// (manifest and templates, sensitive values sealed or redacted), the cdkx version, and the options of the
// run. Provider credentials are never in it: a runner reads them from its own environment.
type Snapshot struct {
	Format      int                  `json:"format"`
	CdkxVersion string               `json:"cdkxVersion"`
	Kind        state.DeploymentKind `json:"kind"`
	// Files are the manifest and templates by slash-separated name (manifest.json, App.json…).
	Files map[string]json.RawMessage `json:"files,omitempty"`
	// Assets are the files of the assets the templates use (assembly.Assembly.AssetFiles), by
	// slash-separated name relative to the assembly ("assets/asset.<hash>/cloud-init.yaml"), base64 in
	// JSON, at most MaxSnapshotAssets bytes in all: a run from the snapshot uses exactly these bytes, and
	// the snapshot's hash (state.BindSnapshot) covers them.
	Assets map[string][]byte `json:"assets,omitempty"`
	// Salt (base64) derives the key of the sealed values; empty when none is sealed.
	Salt string `json:"salt,omitempty"`
	// Redacted is set when sensitive values were left out: the snapshot cannot run again.
	Redacted bool `json:"redacted,omitempty"`
	// Options are the run's options.
	Options SnapshotOptions `json:"options"`
}

// SnapshotOptions are the options a snapshot runs with.
type SnapshotOptions struct {
	Stacks     []string `json:"stacks"`
	Targets    []string `json:"targets,omitempty"`
	Excludes   []string `json:"excludes,omitempty"`
	Replace    []string `json:"replace,omitempty"`
	Refresh    bool     `json:"refresh,omitempty"`
	NoRollback bool     `json:"noRollback,omitempty"`
}

// MaxSnapshotAssets is the most bytes of asset files a snapshot holds, 2 MiB: assets are cloud-init files
// and scripts, and the snapshot is stored (base64: 4/3 of the bytes) with the deployment of every stack
// recorded at once, which the state service accepts up to its DeploymentBodyLimit (32 MiB) in one request.
const MaxSnapshotAssets = 2 << 20

// ErrNoPassphrase is returned (wrapped) when a snapshot holds sealed values and no passphrase was given,
// or when one must be sealed and none was given.
var ErrNoPassphrase = errors.New("set " + secret.EnvPassphrase)

// sealSnapshot builds the snapshot of files (a's manifest and templates): every write-only property of a
// resource whose schema reg knows is sealed with passphrase, or redacted when passphrase is "" and
// redact is allowed (otherwise that is ErrNoPassphrase, wrapped, naming the first such property).
func sealSnapshot(a *assembly.Assembly, files map[string][]byte, reg *engine.Registry, passphrase string, redact bool) (*Snapshot, error) {
	snap := &Snapshot{Format: SnapshotFormat, Files: map[string]json.RawMessage{}}
	for name, data := range files {
		snap.Files[name] = json.RawMessage(data)
	}
	assets, err := a.AssetFiles(MaxSnapshotAssets)
	if err != nil {
		if errors.Is(err, assembly.ErrAssetsTooLarge) {
			return nil, fmt.Errorf("the assets the stacks use are larger than %d MiB, the most a deployment's snapshot holds (%w): make them smaller (fetch large files from the instance instead); nothing was recorded",
				MaxSnapshotAssets>>20, err)
		}
		return nil, fmt.Errorf("snapshot the assets: %w; nothing was recorded", err)
	}
	if len(assets) > 0 {
		snap.Assets = assets
	}
	var box *secret.Box
	for _, s := range a.Stacks {
		var secrets [][2]string // logical ID, property
		for _, r := range s.Resources {
			schema, _, _ := reg.Schema(r.Provider, r.Type)
			if !schema.HasWriteOnly() {
				continue // no secret to look for: no sorted copy of its keys
			}
			for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
				if schema.Properties[k].WriteOnly && r.Properties[k] != nil {
					secrets = append(secrets, [2]string{r.LogicalID, k})
				}
			}
		}
		if len(secrets) == 0 {
			continue
		}
		if passphrase == "" && !redact {
			return nil, fmt.Errorf("%s/%s: property %q is sensitive and a deployment that runs later must keep it encrypted: %w (the runner needs the same passphrase)",
				s.ID, secrets[0][0], secrets[0][1], ErrNoPassphrase)
		}
		if passphrase != "" && box == nil {
			var err error
			if box, err = secret.NewBox(passphrase, nil); err != nil {
				return nil, err
			}
			snap.Salt = base64.StdEncoding.EncodeToString(box.Salt())
		}
		t, err := decodeJSON(files[s.TemplateFile])
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", s.TemplateFile, err)
		}
		resources := t
		if !s.Legacy {
			resources, _ = t["resources"].(map[string]any)
		}
		for _, sec := range secrets {
			res, _ := resources[sec[0]].(map[string]any)
			props, _ := res["properties"].(map[string]any)
			if props == nil {
				continue
			}
			if box == nil {
				props[sec[1]] = map[string]any{RedactedKey: true}
				snap.Redacted = true
				continue
			}
			plain, err := json.Marshal(props[sec[1]])
			if err != nil {
				return nil, err
			}
			props[sec[1]] = map[string]any{SealedKey: box.Seal(plain)}
		}
		out, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		snap.Files[s.TemplateFile] = out
	}
	return snap, nil
}

// Encode returns the snapshot's stored bytes and their SHA-256 (hex). The files go in as they are (a
// UTF-8 byte order mark dropped), in name order, after a validity check: re-encoding them would copy and
// compact megabytes of templates for nothing.
func (s *Snapshot) Encode() ([]byte, string, error) {
	meta := *s
	meta.Files = nil
	head, err := json.Marshal(meta) // {"format":…} without "files"
	if err != nil {
		return nil, "", err
	}
	names := slices.Sorted(maps.Keys(s.Files))
	size := len(head) + len(`{"files":{},`)
	for _, n := range names {
		size += len(n) + len(s.Files[n]) + 8
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"files":{`)
	for i, n := range names {
		raw := bytes.TrimPrefix(s.Files[n], []byte("\xef\xbb\xbf"))
		if !json.Valid(raw) {
			return nil, "", fmt.Errorf("snapshot: %s is not valid JSON", n)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(n) // a string always encodes
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	buf.WriteString("},")
	buf.Write(head[1:])
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}

// DecodeSnapshot parses a deployment's stored snapshot.
func DecodeSnapshot(d *state.Deployment) (*Snapshot, error) {
	if len(d.Snapshot) == 0 {
		return nil, fmt.Errorf("deployment %s has no snapshot to run", d.ID)
	}
	var s Snapshot
	if err := json.Unmarshal(d.Snapshot, &s); err != nil || s.Format == 0 {
		return nil, fmt.Errorf("deployment %s was recorded by an older cdkx without a runnable snapshot (its snapshot is only the template it ran)", d.ID)
	}
	if s.Format != SnapshotFormat {
		return nil, fmt.Errorf("deployment %s has a snapshot of format %d; this cdkx reads format %d", d.ID, s.Format, SnapshotFormat)
	}
	return &s, nil
}

// Sealed reports whether the snapshot holds encrypted values.
func (s *Snapshot) Sealed() bool { return s.Salt != "" }

// Open returns the snapshot's files with every sealed value decrypted with passphrase, and its assets'
// files (Assets; LoadSnapshot verifies their hashes against the manifest's). Errors:
// ErrNoPassphrase (wrapped) when values are sealed and passphrase is "", secret.ErrWrongPassphrase
// (wrapped) when they do not open, and an error for a redacted snapshot, which cannot run again.
func (s *Snapshot) Open(passphrase string) (map[string][]byte, error) {
	if s.Redacted {
		return nil, errors.New("its sensitive values were left out when it was recorded (no " + secret.EnvPassphrase + " was set then): deploy again instead")
	}
	var box *secret.Box
	if s.Sealed() {
		if passphrase == "" {
			return nil, fmt.Errorf("it holds encrypted sensitive values: %w to the passphrase it was created with", ErrNoPassphrase)
		}
		salt, err := base64.StdEncoding.DecodeString(s.Salt)
		if err != nil {
			return nil, fmt.Errorf("its salt is not base64: %w", err)
		}
		if box, err = secret.NewBox(passphrase, salt); err != nil {
			return nil, err
		}
	}
	out := map[string][]byte{}
	for name, data := range s.Assets {
		if _, dup := s.Files[name]; dup {
			return nil, fmt.Errorf("its asset %s has the name of one of its files", name)
		}
		out[name] = data
	}
	for name, raw := range s.Files {
		if box == nil || !bytes.Contains(raw, []byte(SealedKey)) {
			out[name] = raw
			continue
		}
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		opened, err := walkSealed(v, func(sealed string) (any, error) {
			plain, err := box.Open(sealed)
			if err != nil {
				return nil, err
			}
			return decodeValue(plain)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if out[name], err = json.Marshal(opened); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Shown returns the snapshot's files with sealed values shown as "(sensitive)", for comparing snapshots
// without a passphrase.
func (s *Snapshot) Shown() (map[string]any, error) {
	out := map[string]any{}
	for name, raw := range s.Files {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		if out[name], err = walkSealed(v, func(string) (any, error) { return "(sensitive)", nil }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// walkSealed returns v with every {"cdkx:sealed": S} replaced by open(S).
func walkSealed(v any, open func(string) (any, error)) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if s, ok := t[SealedKey].(string); ok && len(t) == 1 {
			return open(s)
		}
		for k, e := range t {
			n, err := walkSealed(e, open)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
	case []any:
		for i, e := range t {
			n, err := walkSealed(e, open)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
	}
	return v, nil
}

func decodeJSON(data []byte) (map[string]any, error) {
	v, err := decodeValue(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// LoadSnapshot loads and validates the assembly of a snapshot whose files were opened (Snapshot.Open), as
// `cdkx deploy` would the same files: the assembly, the graph of all its stacks and the diagnostics. The
// assembly is named "snapshot of <deployment ID>" in diagnostics. The assets' hashes are verified (an
// asset changed or missing in the snapshot is an error diagnostic); the assembly's AssetDir is "" until
// they are written out (writeAssets).
func LoadSnapshot(id string, files map[string][]byte, reg *engine.Registry) (*assembly.Assembly, *planner.Graph, diag.Diagnostics) {
	a, ds := assembly.LoadFiles("snapshot of "+id, files)
	if a == nil {
		return nil, nil, ds
	}
	return Validate(a, ds, reg)
}

// Validate finishes checking a loaded assembly for deployment in one pass — references, provider schemas,
// dependency cycles — after load's diagnostics ds, and marks the implied orderings (assembly.Imply). It
// returns the dependency graph of all stacks (planner.Input.Graph reuses it) and every diagnostic,
// sorted; the assembly is nil when any diagnostic is an error.
func Validate(a *assembly.Assembly, ds diag.Diagnostics, reg *engine.Registry) (*assembly.Assembly, *planner.Graph, diag.Diagnostics) {
	ds = append(ds, assembly.Validate(a, reg)...)
	assembly.Imply(a, reg.Schema)
	all := make([]string, len(a.Stacks))
	for i, s := range a.Stacks {
		all[i] = s.ID
	}
	g, gds := planner.BuildGraph(a, all)
	ds = append(ds, gds...)
	ds.Sort()
	if ds.HasErrors() {
		return nil, nil, ds
	}
	return a, g, ds
}
