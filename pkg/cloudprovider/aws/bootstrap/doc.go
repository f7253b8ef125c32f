// Package bootstrap emulates what an EKS node image does with its user data
// when it boots, so the AWS provider can be exercised end to end on a local
// EC2 (moto_server) with kwok playing the kubelets.
//
// Parse is the inverse of package userdata: it reads an instance's user
// data the way each real image does (AL2's /etc/eks/bootstrap.sh argument
// loop, AL2023's nodeadm merging NodeConfig parts, Bottlerocket's TOML
// settings, EC2Launch running Windows' Start-EKSBootstrap.ps1) and returns what the kubelet registers with: cluster, labels,
// taints, max-pods, reserved resources. It reproduces the images' quirks
// rather than being lenient: bootstrap.sh treats
// --kubelet-extra-args='...' (with '=') as an unknown positional argument
// and drops the flags, and a kubelet given a malformed taint or a
// restricted kubernetes.io label exits instead of registering.
//
// Nodes is a manager.Runnable that plays the machines: for each running
// instance of the local EC2 it decides whether the node would join this
// cluster (image architecture matching the instance type, the node role
// mapped in kube-system/aws-auth, user data naming this cluster) and, if
// so, registers a kwok Node with providerID aws:///<zone>/<instance-id>,
// the labels, taints and capacity the kubelet would report. An instance
// that would not join gets no Node, only a log line and an Outcome, just
// as a real one leaves only its console log: explaining it is joiner's
// registration diagnosis's job.
//
// It is test and demo machinery: joiner's controllers never import it.
package bootstrap
