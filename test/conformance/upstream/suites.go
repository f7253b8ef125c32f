// Package upstream pins the Karpenter release whose end-to-end suites
// `make conformance` runs against joiner: sigs.k8s.io/karpenter's
// test/suites/regression and test/suites/performance, built with
// `go test -c` from this module (see test/conformance).
//
// The blank imports keep every package those suites' test files import in
// this module's build list and go.sum, so the test binaries build offline
// from the module cache once `go mod download` has run.
package upstream

import (
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	_ "sigs.k8s.io/karpenter/pkg/test"
	_ "sigs.k8s.io/karpenter/test/pkg/debug"
	_ "sigs.k8s.io/karpenter/test/pkg/environment/common"
)
