package state

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestVolumeLimitsComeFromTheCSINode(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNode(node("node-1", "sim:///z/i-1", nil))
	cn := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "ebs.csi.aws.com", NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](25)}},
			{Name: "efs.csi.aws.com", NodeID: "i-1"},
		}},
	}
	c.UpdateVolumeLimits("node-1", VolumeLimits(cn))
	sn, _ := c.NodeByName("node-1")
	en := sn.ExistingNode()
	if en.VolumeLimits["ebs.csi.aws.com"] != 25 {
		t.Fatalf("ebs limit = %v, want 25", en.VolumeLimits)
	}
	if _, ok := en.VolumeLimits["efs.csi.aws.com"]; ok {
		t.Fatalf("a driver without a count is unlimited, not listed")
	}
	c.UpdateVolumeLimits("node-1", nil)
	if sn, _ := c.NodeByName("node-1"); sn.VolumeLimits != nil {
		t.Fatalf("a deleted CSINode's limits are forgotten")
	}
}
