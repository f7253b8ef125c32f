package ownwrites_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestKeptObjects(t *testing.T) {
	a := types.NamespacedName{Name: "a"}
	obj := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name string
		do   func(w *ownwrites.Record)
		rv   string // the cache's version; "" when the cache lacks the object
		// stale, and the kept version Latest returns ("" for none).
		stale bool
		kept  string
	}{
		{name: "a kept write, cache behind", do: func(w *ownwrites.Record) { w.Keep(a, "5", obj("9")) }, rv: "5", stale: true, kept: "9"},
		{name: "a kept write, cache caught up", do: func(w *ownwrites.Record) { w.Keep(a, "5", obj("9")) }, rv: "9"},
		{name: "a later write kept nothing", do: func(w *ownwrites.Record) { w.Keep(a, "5", obj("9")); w.Wrote(a, "9", "12") }, rv: "9", stale: true},
		{name: "the kept copy discarded", do: func(w *ownwrites.Record) { w.Keep(a, "5", obj("9")); w.Discard(a) }, rv: "5", stale: true},
		{name: "a create the cache has not shown", do: func(w *ownwrites.Record) { w.Keep(a, "", obj("3")) }, rv: "", stale: true, kept: "3"},
		{name: "a create, then writes from its copy", do: func(w *ownwrites.Record) { w.Keep(a, "", obj("3")); w.Keep(a, "3", obj("4")) }, rv: "", stale: true, kept: "4"},
		{name: "a create the cache showed, then gone", do: func(w *ownwrites.Record) { w.Keep(a, "", obj("3")); w.Keep(a, "3", obj("4")); w.Latest(a, "3") }, rv: ""},
		{name: "an update, then gone from the cache", do: func(w *ownwrites.Record) { w.Keep(a, "5", obj("9")) }, rv: ""},
		{name: "a create handed over after a later write was recorded", do: func(w *ownwrites.Record) { w.Keep(a, "3", obj("4")); w.Keep(a, "", obj("3")) }, rv: "3", stale: true, kept: "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := ownwrites.New()
			tc.do(w)
			got, stale := w.Latest(a, tc.rv)
			kept := ""
			if got != nil {
				kept = got.GetResourceVersion()
			}
			if stale != tc.stale || kept != tc.kept {
				t.Fatalf("Latest(%q) = kept %q, stale %v; want kept %q, stale %v", tc.rv, kept, stale, tc.kept, tc.stale)
			}
		})
	}
}

func TestKeptObjectIsACopy(t *testing.T) {
	a := types.NamespacedName{Name: "a"}
	w := ownwrites.New()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "9"}, Data: map[string]string{"k": "kept"}}
	w.Keep(a, "5", cm)
	cm.Data["k"] = "changed by the writer afterwards"
	got, _ := w.Latest(a, "5")
	got.(*corev1.ConfigMap).Data["k"] = "changed by a reader"
	again, _ := w.Latest(a, "5")
	if v := again.(*corev1.ConfigMap).Data["k"]; v != "kept" {
		t.Fatalf("kept object reads %q, want the copy made at Keep", v)
	}
}
