package sim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// KWOKCatalog is the catalog name of the instance types Karpenter's kwok
// provider offers; a KWOKNodeClass launches from it, and a SimNodeClass may
// name it in spec.catalog.name.
const KWOKCatalog = "kwok"

// KWOKZones are the kwok provider's zones.
var KWOKZones = []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}

// The kwok provider's generic instance types: every size in vCPUs, three
// memory ratios (family c: 2 GiB per vCPU, s: 4, m: 8), two architectures
// and two operating systems, named <family>-<vcpu>x-<arch>-<os>.
var (
	kwokSizes    = []int64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256}
	kwokFamilies = []struct {
		name       string
		gibPerVCPU int64
	}{{"c", 2}, {"s", 4}, {"m", 8}}
	kwokArchs = []string{"amd64", "arm64"}
	kwokOSes  = []string{"linux", "windows"}
)

// kwokPrice is the kwok provider's on-demand price: 2.5 cents per vCPU
// and 0.1 cent per GB (10^9 bytes) of memory an hour; spot costs 70% of it.
func kwokPrice(vcpu int64, memory resource.Quantity) float64 {
	return 0.025*float64(vcpu) + 0.001*memory.AsApproximateFloat64()/1e9
}

const kwokSpotDiscount = 0.7

var kwokCatalog = sync.OnceValue(buildKWOKCatalog)

func buildKWOKCatalog() []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	for _, vcpu := range kwokSizes {
		for _, f := range kwokFamilies {
			for _, os := range kwokOSes {
				for _, arch := range kwokArchs {
					out = append(out, kwokInstanceType(vcpu, f.name, f.gibPerVCPU, arch, os))
				}
			}
		}
	}
	return out
}

func kwokInstanceType(vcpu int64, family string, gibPerVCPU int64, arch, os string) *scheduling.InstanceType {
	name := fmt.Sprintf("%s-%dx-%s-%s", family, vcpu, arch, os)
	memory := resource.MustParse(fmt.Sprintf("%dGi", vcpu*gibPerVCPU))
	cpu := strconv.FormatInt(vcpu, 10)
	price := kwokPrice(vcpu, memory)
	var offerings []scheduling.Offering
	for _, ct := range []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot} {
		p := price
		if ct == v1.CapacityTypeSpot {
			p *= kwokSpotDiscount
		}
		for _, z := range KWOKZones {
			offerings = append(offerings, scheduling.Offering{Zone: z, CapacityType: ct, Price: p, Available: true})
		}
	}
	return &scheduling.InstanceType{
		Name: name,
		Requirements: map[string][]string{
			corev1.LabelInstanceTypeStable:   {name},
			corev1.LabelArchStable:           {arch},
			corev1.LabelOSStable:             {os},
			corev1.LabelTopologyZone:         append([]string(nil), KWOKZones...),
			v1.LabelCapacityType:             {v1.CapacityTypeOnDemand, v1.CapacityTypeSpot},
			kwokv1alpha1.LabelInstanceSize:   {cpu},
			kwokv1alpha1.LabelInstanceFamily: {family},
			kwokv1alpha1.LabelInstanceCPU:    {cpu},
			kwokv1alpha1.LabelInstanceMemory: {memory.String()},
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse(cpu),
			corev1.ResourceMemory:           memory,
			corev1.ResourcePods:             *resource.NewQuantity(min(vcpu*16, 1024), resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
		},
		Overhead: scheduling.Overhead{KubeReserved: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("10Mi"),
		}},
		Offerings: offerings,
	}
}

// kwokLaunchDelay: kwok's nodes launch at once; only the node class's
// registration delay models a boot.
const kwokLaunchDelay = time.Millisecond

// kwokNodeClass reads the KWOKNodeClass a reference names and returns the
// SimNodeClass the simulated cloud launches it as: the kwok catalog in the
// kwok zones, registering after spec.nodeRegistrationDelay. The result
// carries the KWOKNodeClass's name and generation so drift and errors name
// it.
func (p *Provider) kwokNodeClass(ctx context.Context, ref *v1.NodeClassReference) (*simv1alpha1.SimNodeClass, error) {
	kc := &kwokv1alpha1.KWOKNodeClass{}
	if err := p.opts.Client.Get(ctx, types.NamespacedName{Name: ref.Name}, kc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q not found; create it or fix the nodeClassRef", ref.Name))
		}
		return nil, fmt.Errorf("getting KWOKNodeClass %s: %w", ref.Name, err)
	}
	if !kc.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q is being deleted", ref.Name))
	}
	if c := meta.FindStatusCondition(kc.Status.Conditions, kwokv1alpha1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionFalse {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %q is not ready: %s", ref.Name, c.Message))
	}
	return SimNodeClassOfKWOK(kc), nil
}

// SimNodeClassOfKWOK is the SimNodeClass a KWOKNodeClass launches as.
func SimNodeClassOfKWOK(kc *kwokv1alpha1.KWOKNodeClass) *simv1alpha1.SimNodeClass {
	nc := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: kc.Name, UID: kc.UID, Generation: kc.Generation},
		Spec: simv1alpha1.SimNodeClassSpec{
			Zones:             append([]string(nil), KWOKZones...),
			Catalog:           simv1alpha1.Catalog{Name: KWOKCatalog},
			LaunchDelay:       metav1.Duration{Duration: kwokLaunchDelay},
			RegistrationDelay: metav1.Duration{Duration: max(kc.Spec.NodeRegistrationDelay.Duration, time.Millisecond)},
		},
	}
	nc.ApplyDefaults()
	return nc
}
