package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestFillSearchTakesTheMostThatFits holds fill's per-node knapsack to the
// combination of a reservoir's pods, by request shape and within each
// shape's count, that carries the most of the binding resource into the
// room a small node has, found by hand.
func TestFillSearchTakesTheMostThatFits(t *testing.T) {
	shape := func(cpu, mem int64, count int) *fillShape {
		return &fillShape{req: resVec{cpu, mem, 1}, pods: make([]*corev1.Pod, count), cls: make([]*podClass, count)}
	}
	for _, tc := range []struct {
		name   string
		shapes []*fillShape // heaviest in memory first, as fillPlan sorts them
		room   resVec
		want   int64 // memory taken
		take   []int
	}{
		// 1.2 cpu and 5 GiB of room: one 4 GiB pod and one 1 GiB pod
		// (0.35 cpu) beat two 2 GiB pods and a 1 GiB pod.
		{name: "largest pieces that fit", shapes: []*fillShape{shape(100, 4096, 3), shape(250, 2048, 3), shape(250, 1024, 3)},
			room: resVec{1200, 5120, 10}, want: 5120, take: []int{1, 0, 1}},
		// The room's cpu keeps the 4 GiB pod (1 cpu) out: two 2 GiB pods.
		{name: "cpu bounds the take", shapes: []*fillShape{shape(1000, 4096, 3), shape(250, 2048, 3), shape(250, 1024, 3)},
			room: resVec{600, 5120, 10}, want: 4096, take: []int{0, 2, 0}},
		// Only two pods of the best shape are left on the reservoir.
		{name: "counts bound each shape", shapes: []*fillShape{shape(100, 2048, 2), shape(100, 1024, 3)},
			room: resVec{1000, 8192, 10}, want: 6144, take: []int{2, 2}},
		// Pod slots bound the take as any resource does.
		{name: "pod slots bound the take", shapes: []*fillShape{shape(100, 1024, 5)},
			room: resVec{1000, 8192, 2}, want: 2048, take: []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &filler{shapes: tc.shapes, room: tc.room.clone(), b: resMemory, max: 1 << 20}
			fs.take = resize[int](nil, len(tc.shapes))
			fs.best = resize[int](nil, len(tc.shapes))
			fs.search(0, 0, 0)
			if fs.bestB != tc.want {
				t.Fatalf("took %d MiB, want %d", fs.bestB, tc.want)
			}
			for k, n := range tc.take {
				if fs.best[k] != n {
					t.Errorf("took %v of the shapes, want %v", fs.best, tc.take)
					break
				}
			}
			for i, x := range fs.room {
				if x != tc.room[i] {
					t.Errorf("the search left the room at %v, want it restored to %v", fs.room, tc.room)
					break
				}
			}
		})
	}
}
