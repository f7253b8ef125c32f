package disruption

import (
	"context"
	"fmt"
	"k8s.io/klog/v2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// maxVerdictWritesPerPass bounds the NodeClaim patches one pass makes to
// store verdicts. The first pass on a large cluster would otherwise patch
// every NodeClaim at once; the rest follow on the next passes (each write
// changes the state's generation, so the next pass is not memoised away).
const maxVerdictWritesPerPass = 50

// storeVerdicts writes each managed node's verdict to its NodeClaim's
// joiner.dev/disruption-verdict annotation, where `joiner explain` (another
// process, with no access to this one's memory or its deduplicated events)
// reads why the node is or is not being disrupted.
//
// Why an annotation and not a condition: status conditions on a NodeClaim
// belong to the lifecycle controller's single status patch per reconcile,
// and Karpenter's Consolidatable condition already means "quiet for
// consolidateAfter"; the verdict is several typed fields and figures,
// which a condition's reason/message would flatten into text. A metadata
// merge patch of one annotation key touches nothing another writer owns.
//
// Without write storms: a record is rewritten only when it says something
// different (Record.Same ignores Since and rounds prices), at most
// maxVerdictWritesPerPass per pass, only on initialised NodeClaims that
// are not being deleted.
func (c *Controller) storeVerdicts(ctx context.Context, in *disruption.Input, dec *disruption.Decision) {
	now := c.opts.Clock.Now()
	writes := 0
	for i, v := range dec.Verdicts {
		if i >= len(in.Nodes) || writes >= maxVerdictWritesPerPass {
			break
		}
		// Until it is initialised a NodeClaim's story is the lifecycle
		// controller's (and its optimistic-lock patches should not race
		// ours); a deleting one is termination's.
		n := &in.Nodes[i]
		nc := n.NodeClaim
		if nc == nil || nc.UID == "" || !n.Initialized || n.Deleting || nc.DeletionTimestamp != nil {
			continue
		}
		rec := disruption.NewRecord(v, dec.Command)
		if old, err := disruption.DecodeRecord(nc.Annotations[v1.AnnotationDisruptionVerdict]); err == nil && old.Same(rec) {
			continue
		}
		rec.Since = now.UTC().Truncate(1e9)
		writes++
		if err := writeVerdict(ctx, c.opts.Client, nc, rec); err != nil {
			log.FromContext(ctx).Error(err, "storing disruption verdict", logging.NodeClaim, klog.KObj(nc))
		}
	}
}

// writeVerdict merge-patches the one annotation onto nc.
func writeVerdict(ctx context.Context, c client.Client, nc *v1.NodeClaim, rec disruption.Record) error {
	patched := nc.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[v1.AnnotationDisruptionVerdict] = rec.Encode()
	if err := c.Patch(ctx, patched, client.MergeFrom(nc)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}
