package e2e

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var clientGracePeriodZero = client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
