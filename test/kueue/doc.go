// Package kueue is joiner's end-to-end test with a real client of its
// ProvisioningRequests: Kueue's manager, built from the Go module proxy by
// hack/kueue.sh, runs against the local control plane with its webhooks
// served on loopback and a ProvisioningRequest admission check, beside the
// real joiner binary on the AWS provider against the local EC2 (moto_server
// behind the local EC2's front, which holds instant fleets to
// MinTargetCapacity as EC2 does). `make e2e-kueue` builds Kueue and runs
// it; it is not part of `make test` (a fresh Kueue build takes several
// minutes).
package kueue
