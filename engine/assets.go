package engine

import (
	"context"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// AssetResolver turns the machine-independent form of an asset path ("assets/asset.<hash>/cloud-init.yaml",
// relative to the assembly, as assembly.Load rewrites it) into the absolute path of this run's copy of the
// asset; ok is false for any other string. assembly.Assembly.ResolveAsset is one.
type AssetResolver func(rel string) (abs string, ok bool)

// ResolveAssets returns props with every string (at any depth) that assets resolves replaced by its
// absolute path, and the replacements made (absolute path → machine-independent form). Only the maps and
// lists on the way to a replaced string are copied: props itself, which state and events keep, is never
// changed. With a nil assets, or nothing to replace, props is returned as it is.
func ResolveAssets(props resource.Properties, assets AssetResolver) (resource.Properties, map[string]string) {
	if assets == nil || props == nil {
		return props, nil
	}
	var done map[string]string
	out, changed := resolveAssets(map[string]any(props), assets, &done)
	if !changed {
		return props, nil
	}
	return out.(map[string]any), done
}

func resolveAssets(v any, assets AssetResolver, done *map[string]string) (any, bool) {
	switch t := v.(type) {
	case string:
		abs, ok := assets(t)
		if !ok {
			return v, false
		}
		if *done == nil {
			*done = map[string]string{}
		}
		(*done)[abs] = t
		return abs, true
	case map[string]any:
		var c map[string]any
		for k, e := range t {
			n, changed := resolveAssets(e, assets, done)
			if !changed {
				continue
			}
			if c == nil {
				c = make(map[string]any, len(t))
				for k2, e2 := range t {
					c[k2] = e2
				}
			}
			c[k] = n
		}
		if c == nil {
			return v, false
		}
		return c, true
	case []any:
		var c []any
		for i, e := range t {
			n, changed := resolveAssets(e, assets, done)
			if !changed {
				continue
			}
			if c == nil {
				c = append([]any(nil), t...)
			}
			c[i] = n
		}
		if c == nil {
			return v, false
		}
		return c, true
	}
	return v, false
}

// unresolveAssets returns props with every string that done maps (an absolute path handed to the
// provider) put back in its machine-independent form: what a provider reads back from an object is
// compared with the recorded inputs, and outputs that echo an input (Cdkx::Core::Data) are recorded and
// passed on to other resources in the form every machine can resolve.
func unresolveAssets(props resource.Properties, done map[string]string) resource.Properties {
	if len(done) == 0 || props == nil {
		return props
	}
	back := func(abs string) (string, bool) { rel, ok := done[abs]; return rel, ok }
	out, _ := ResolveAssets(props, back)
	return out
}

// assetProvider is a Provider whose requests carry absolute asset paths: the executor wraps the provider
// of each call in one, so that this is the one place where asset paths are resolved (recorded inputs,
// events and plans keep the machine-independent form).
type assetProvider struct {
	Provider
	assets AssetResolver
}

// withAssets returns p resolving asset paths with assets; p itself when assets is nil.
func withAssets(p Provider, assets AssetResolver) Provider {
	if assets == nil {
		return p
	}
	return assetProvider{Provider: p, assets: assets}
}

func (p assetProvider) Create(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	var done map[string]string
	req.Properties, done = ResolveAssets(req.Properties, p.assets)
	res, err := p.Provider.Create(ctx, req)
	res.Outputs = unresolveAssets(res.Outputs, done)
	return res, err
}

func (p assetProvider) Read(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	var done map[string]string
	req.Properties, done = ResolveAssets(req.Properties, p.assets)
	res, err := p.Provider.Read(ctx, req)
	res.Properties, res.Outputs = unresolveAssets(res.Properties, done), unresolveAssets(res.Outputs, done)
	return res, err
}

func (p assetProvider) Update(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	var doneOld, done map[string]string
	req.Old, doneOld = ResolveAssets(req.Old, p.assets)
	req.New, done = ResolveAssets(req.New, p.assets)
	for abs, rel := range doneOld {
		if done == nil {
			done = map[string]string{}
		}
		done[abs] = rel
	}
	res, err := p.Provider.Update(ctx, req)
	res.Outputs = unresolveAssets(res.Outputs, done)
	return res, err
}

func (p assetProvider) Delete(ctx context.Context, req resource.DeleteRequest) error {
	req.Properties, _ = ResolveAssets(req.Properties, p.assets)
	return p.Provider.Delete(ctx, req)
}

func (p assetProvider) Locate(ctx context.Context, req resource.CreateRequest) (string, error) {
	req.Properties, _ = ResolveAssets(req.Properties, p.assets)
	return p.Provider.Locate(ctx, req)
}

func (p assetProvider) Preflight(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	rs := make([]resource.PreflightResource, len(req.Resources))
	for i, r := range req.Resources {
		r.Properties, _ = ResolveAssets(r.Properties, p.assets)
		rs[i] = r
	}
	req.Resources = rs
	return p.Provider.Preflight(ctx, req)
}
