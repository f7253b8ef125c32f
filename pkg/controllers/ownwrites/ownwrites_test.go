package ownwrites_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/controllers/ownwrites"
)

func TestOwnWrites(t *testing.T) {
	a := types.NamespacedName{Name: "a"}
	b := types.NamespacedName{Name: "b"}
	for _, tc := range []struct {
		name  string
		do    func(w *ownwrites.Record)
		key   types.NamespacedName
		rv    string
		stale bool
	}{
		{name: "nothing written", do: func(*ownwrites.Record) {}, key: a, rv: "1"},
		{name: "the version a write replaced", do: func(w *ownwrites.Record) { w.Wrote(a, "1", "") }, key: a, rv: "1", stale: true},
		{name: "an earlier version replaced in the same reconcile", do: func(w *ownwrites.Record) { w.Wrote(a, "1", ""); w.Wrote(a, "2", "") }, key: a, rv: "1", stale: true},
		{name: "the written version itself", do: func(w *ownwrites.Record) { w.Wrote(a, "1", "") }, key: a, rv: "2"},
		{name: "another object", do: func(w *ownwrites.Record) { w.Wrote(a, "1", "") }, key: b, rv: "1"},
		{name: "after the cache caught up", do: func(w *ownwrites.Record) { w.Wrote(a, "1", ""); w.Stale(a, "2") }, key: a, rv: "1"},
		{name: "after the object went", do: func(w *ownwrites.Record) { w.Wrote(a, "1", ""); w.Forget(a) }, key: a, rv: "1"},
		{name: "a write without a version", do: func(w *ownwrites.Record) { w.Wrote(a, "", "") }, key: a, rv: ""},
		{name: "older than the version a write produced", do: func(w *ownwrites.Record) { w.Wrote(a, "5", "9") }, key: a, rv: "7", stale: true},
		{name: "older by more digits", do: func(w *ownwrites.Record) { w.Wrote(a, "95", "100") }, key: a, rv: "99", stale: true},
		{name: "the produced version", do: func(w *ownwrites.Record) { w.Wrote(a, "5", "9") }, key: a, rv: "9"},
		{name: "newer than the produced version", do: func(w *ownwrites.Record) { w.Wrote(a, "5", "9") }, key: a, rv: "10"},
		{name: "caught up, then an old version again", do: func(w *ownwrites.Record) { w.Wrote(a, "5", "9"); w.Stale(a, "9") }, key: a, rv: "7"},
		{name: "versions that are not integers: equality only", do: func(w *ownwrites.Record) { w.Wrote(a, "x5", "x9") }, key: a, rv: "x7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := ownwrites.New()
			tc.do(w)
			if got := w.Stale(tc.key, tc.rv); got != tc.stale {
				t.Fatalf("stale(%s, %q) = %v, want %v", tc.key.Name, tc.rv, got, tc.stale)
			}
		})
	}
}
