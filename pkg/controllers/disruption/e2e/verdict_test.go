package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/test"
)

// waitVerdict waits until the NodeClaim's stored disruption verdict
// (joiner.dev/disruption-verdict, what `joiner explain` reads) is in state
// with a message containing text, and carries the message's kind when the
// node is held.
func (s *scenario) waitVerdict(name string, state disruption.State, text string, timeout time.Duration) {
	s.t.Helper()
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		nc := &v1.NodeClaim{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return err
		}
		raw, ok := nc.Annotations[v1.AnnotationDisruptionVerdict]
		if !ok {
			return fmt.Errorf("nodeclaim %s has no %s annotation", name, v1.AnnotationDisruptionVerdict)
		}
		rec, err := disruption.DecodeRecord(raw)
		if err != nil {
			return err
		}
		if rec.State != state || !strings.Contains(rec.Message, text) || rec.Since.IsZero() {
			return fmt.Errorf("nodeclaim %s verdict is %s %q (since %s), want %s containing %q", name, rec.State, rec.Message, rec.Since, state, text)
		}
		if held := state == disruption.StateBlocked || state == disruption.StateUnconsolidatable; held == (rec.Kind == "") {
			s.t.Errorf("nodeclaim %s verdict %s %q stored with kind %q", name, rec.State, rec.Message, rec.Kind)
		}
		return nil
	})
}
