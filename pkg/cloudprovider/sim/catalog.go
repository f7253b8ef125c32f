package sim

import (
	"fmt"
	"strings"
	"sync"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// builtCatalogs caches catalogs by (zones, families): building one is
// deterministic, and GetInstanceTypes runs on every provisioning pass.
var builtCatalogs sync.Map // key string -> []*scheduling.InstanceType

// DefaultCatalog is the CatalogFunc of the built-in catalogs: "aws-like"
// (pkg/catalog's AWS-shaped families with on-demand and spot prices) in the
// node class's zones, narrowed to its instance families when it names any;
// "kwok", the instance types of Karpenter's kwok provider (kwok.go) in
// KWOKZones.
func DefaultCatalog(nc *simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) {
	name := nc.Spec.Catalog.Name
	if name == "" {
		name = simv1alpha1.DefaultCatalog
	}
	if name == KWOKCatalog {
		return kwokCatalog(), nil
	}
	if name != simv1alpha1.DefaultCatalog {
		return nil, fmt.Errorf("unknown catalog %q: the simulated cloud offers %q and %q", name, simv1alpha1.DefaultCatalog, KWOKCatalog)
	}
	key := strings.Join(nc.Spec.Zones, ",") + "|" + strings.Join(nc.Spec.Catalog.InstanceFamilies, ",")
	if its, ok := builtCatalogs.Load(key); ok {
		return its.([]*scheduling.InstanceType), nil
	}
	c, err := catalog.Default(catalog.Options{Zones: nc.Spec.Zones, Families: nc.Spec.Catalog.InstanceFamilies})
	if err != nil {
		return nil, fmt.Errorf("building catalog %q: %w", name, err)
	}
	its := c.InstanceTypes()
	builtCatalogs.Store(key, its)
	return its, nil
}
