package chaos

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reasonTaintManagerEviction is the event kube-controller-manager's
// taint-eviction controller records on a pod it deletes.
const reasonTaintManagerEviction = "TaintManagerEviction"

// A missed deletion's events are asked for missedPolls times,
// missedPollInterval apart: kube-controller-manager records its event as
// it deletes, and under load the event reaches the API server after the
// deletion.
const (
	missedPolls        = 20
	missedPollInterval = 500 * time.Millisecond
)

// missedDeletion is a pod under a PDB whose deletion the pod watch missed,
// waiting for its events.
type missedDeletion struct {
	pod *corev1.Pod
	// polls is how many lists of the events it has been through.
	polls int
}

// onMissedDeletion judges a pod under a PDB whose deletion the watch
// missed, by the events recorded on it (its UID): a TaintManagerEviction
// is judged as the taint-eviction controller's deletion (the Node's
// taints). Without one, how the pod went cannot be told (the Eviction
// API, a ReplicaSet's scale-down and a direct deletion leave the same
// tombstone; joiner's own Evicted event is no proof), so it is noted,
// with the events found, not judged. The blind spot is the seconds a
// watch takes to come back after an API server restart.
//
// The pods a watch missed come in bursts (a scale-down the API server's
// restart cut the watch in: 94 pods in big EC2 round 3023), and the
// events of a namespace are read from etcd whole at every list (the API
// server keeps no watch cache of events): 94 pods polling their own
// events twenty times each read the round's 4,171 events 1,880 times,
// and the restarted kube-apiserver answering them never became ready.
// So one goroutine polls for every waiting pod at once, one list a poll,
// and asks for a pod's PDBs only when it judges it.
func (o *Observer) onMissedDeletion(pod *corev1.Pod) {
	if owner := metav1.GetControllerOf(pod); owner == nil || owner.Kind != "ReplicaSet" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.missed = append(o.missed, &missedDeletion{pod: pod})
	if !o.polling {
		o.polling = true
		o.judging++
		go o.pollMissedDeletions()
	}
}

// pollMissedDeletions lists the namespace's TaintManagerEviction events
// every missedPollInterval, judges each waiting pod one names, notes
// those that waited missedPolls lists in vain, and returns when none is
// left.
func (o *Observer) pollMissedDeletions() {
	for first := true; ; first = false {
		if !first {
			time.Sleep(missedPollInterval)
		}
		o.mu.Lock()
		if len(o.missed) == 0 {
			o.polling = false
			o.judging--
			o.judged.Broadcast()
			o.mu.Unlock()
			return
		}
		waiting := slices.Clone(o.missed)
		o.mu.Unlock()

		evicted := o.uidsWithEvent(reasonTaintManagerEviction)
		var found, unknown []*missedDeletion
		for _, m := range waiting {
			m.polls++
			switch {
			case evicted[m.pod.UID]:
				found = append(found, m)
			case m.polls >= missedPolls:
				unknown = append(unknown, m)
			}
		}
		o.mu.Lock()
		o.missed = slices.DeleteFunc(o.missed, func(m *missedDeletion) bool {
			return slices.Contains(found, m) || slices.Contains(unknown, m)
		})
		o.mu.Unlock()

		found = slices.DeleteFunc(found, func(m *missedDeletion) bool { return !o.hasPDB(m.pod) })
		unknown = slices.DeleteFunc(unknown, func(m *missedDeletion) bool { return !o.hasPDB(m.pod) })
		for _, m := range found {
			o.judgeTaintEviction(m.pod, corev1.PodCondition{Reason: "DeletionByTaintManager", Message: "its " + reasonTaintManagerEviction + " event; the observer's watch missed the deletion"})
		}
		if len(unknown) == 0 {
			continue
		}
		reasons, err := o.eventReasons()
		for _, m := range unknown {
			events := strings.Join(reasons[m.pod.UID], ", ")
			if err != nil {
				events = "listing events: " + err.Error()
			}
			o.note("pod %s under a PDB went while the observer's pod watch was down (a tombstone: the last state it saw had no DisruptionTarget condition), and no %s event names it (its events: [%s]): how it was deleted is unknown, so it is not judged",
				m.pod.Name, reasonTaintManagerEviction, events)
		}
	}
}

// uidsWithEvent are the objects of the namespace that an event of this
// reason names, by UID (none when the list fails: the next poll asks
// again).
func (o *Observer) uidsWithEvent(reason string) map[types.UID]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := o.kube.CoreV1().Events(o.opts.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return nil
	}
	out := map[types.UID]bool{}
	for _, e := range list.Items {
		out[e.InvolvedObject.UID] = true
	}
	return out
}

// eventReasons are the reasons of the namespace's events, by the UID of
// the object each names, sorted.
func (o *Observer) eventReasons() (map[types.UID][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := o.kube.CoreV1().Events(o.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[types.UID][]string{}
	for _, e := range list.Items {
		out[e.InvolvedObject.UID] = append(out[e.InvolvedObject.UID], e.Reason)
	}
	for uid, rs := range out {
		slices.Sort(rs)
		out[uid] = slices.Compact(rs)
	}
	return out, nil
}
