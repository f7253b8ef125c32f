package expiration

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestExpiresAt(t *testing.T) {
	created := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		expireAfter v1.NillableDuration
		want        time.Time
		never       bool
	}{
		{name: "default 720h", expireAfter: v1.MustParseNillableDuration("720h"), want: created.Add(720 * time.Hour)},
		{name: "short", expireAfter: v1.MustParseNillableDuration("90s"), want: created.Add(90 * time.Second)},
		{name: "Never", expireAfter: v1.MustParseNillableDuration(v1.Never), never: true},
		{name: "unset", never: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, Spec: v1.NodeClaimSpec{ExpireAfter: tc.expireAfter}}
			at, ok := ExpiresAt(nc)
			if ok == tc.never || (ok && !at.Equal(tc.want)) {
				t.Fatalf("ExpiresAt = %v, %v; want %v, %v", at, ok, tc.want, !tc.never)
			}
		})
	}
}
