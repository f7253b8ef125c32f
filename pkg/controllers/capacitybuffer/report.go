package capacitybuffer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// Reporter takes each provisioning pass's plan for the buffers
// (provisioning.BufferReporter): it records where the room is in the
// Store, which the controller view and the status page publish, and writes
// each buffer's Provisioning condition, worded by
// capacitybuffer.Outcome.Condition. It patches only a condition that
// changed.
type Reporter struct {
	Client client.Client
	Clock  clock.Clock
	Store  *capacitybuffer.Store
}

// Report implements provisioning.BufferReporter. A failed patch is logged:
// the next pass reports again.
func (r *Reporter) Report(ctx context.Context, outcomes map[types.NamespacedName]*capacitybuffer.Outcome) {
	if r.Store != nil {
		r.Store.Record(outcomes)
	}
	for key, o := range outcomes {
		if err := r.report(ctx, key, o); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "reporting capacitybuffer provisioning", logging.CapacityBuffer, klog.KRef(key.Namespace, key.Name))
		}
	}
}

func (r *Reporter) report(ctx context.Context, key types.NamespacedName, o *capacitybuffer.Outcome) error {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := r.Client.Get(ctx, key, cb); err != nil {
		return err
	}
	if !apimeta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) {
		return nil
	}
	status, reason, msg := o.Condition()
	stored := cb.DeepCopy()
	if !setCondition(&cb.Status.Conditions, cb.Generation, r.Clock, autoscalingv1beta1.ConditionProvisioning, status, reason, msg) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching capacitybuffer status: %w", err)
	}
	return nil
}
