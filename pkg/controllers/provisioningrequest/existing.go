package provisioningrequest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	"github.com/joiner-dev/joiner/pkg/gang"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// detailExistingNodes is the provisioningClassDetails key of the room the
// request's plan booked on capacity that already existed (nodes and
// in-flight NodeClaims): a JSON object from each node's name to the names
// of the request's pods placed there (gang.Pods names). It lives in the
// request's status rather than in joiner's memory, so a restarted joiner
// holds the same room until the booking ends.
const detailExistingNodes = "existingNodes"

// setExisting records placements in pr's status (and removes the record
// when there are none).
func setExisting(pr *autoscalingv1.ProvisioningRequest, placements []scheduling.ExistingPlacement) error {
	if len(placements) == 0 {
		delete(pr.Status.ProvisioningClassDetails, detailExistingNodes)
		return nil
	}
	byNode := map[string][]string{}
	for _, e := range placements {
		for _, p := range e.Pods {
			byNode[e.Node] = append(byNode[e.Node], p.Name)
		}
	}
	for _, names := range byNode {
		slices.Sort(names)
	}
	b, err := json.Marshal(byNode)
	if err != nil {
		return fmt.Errorf("recording placements on existing nodes: %w", err)
	}
	setDetail(pr, detailExistingNodes, string(b))
	return nil
}

// existingPlacements are the request's pods booked on existing capacity,
// by node, rebuilt from its status and PodTemplates (nil when it booked
// none there). A record naming pods the request no longer has (its pod sets
// changed) or whose templates are gone holds nothing for them.
func (c *Controller) existingPlacements(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) (map[string][]*corev1.Pod, error) {
	raw, ok := pr.Status.ProvisioningClassDetails[detailExistingNodes]
	if !ok || raw == "" {
		return nil, nil
	}
	var byNode map[string][]string
	if err := json.Unmarshal([]byte(raw), &byNode); err != nil {
		log.FromContext(ctx).Info("ignoring unreadable placements on existing nodes", logging.Detail, detailExistingNodes, logging.Error, err.Error())
		return nil, nil
	}
	templates, err := c.templates(ctx, pr)
	if err != nil {
		return nil, err
	}
	pods, err := gang.Pods(pr, templates)
	if err != nil {
		log.FromContext(ctx).Info("cannot rebuild the pods booked on existing nodes", logging.Error, err.Error())
		return nil, nil
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	out := map[string][]*corev1.Pod{}
	for node, names := range byNode {
		for _, name := range names {
			if p := byName[name]; p != nil {
				p.Spec.NodeName = node
				out[node] = append(out[node], p)
			}
		}
	}
	return out, nil
}
