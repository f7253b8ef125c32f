// Package userdata generates the EC2 user data that makes an instance join
// the cluster, for each AMI family, merged with the EC2NodeClass's
// spec.userData the way Karpenter merges it (reference §3.9):
//
//   - AL2: a MIME multipart archive whose last part runs
//     /etc/eks/bootstrap.sh with --kubelet-extra-args carrying the node
//     labels, the registration taints (karpenter.sh/unregistered, the
//     NodePool's taints and startup taints) and max-pods; the user's shell
//     script or MIME parts come first.
//   - AL2023: a MIME multipart archive whose last part is a nodeadm
//     NodeConfig; the user's parts (shell, cloud-config, NodeConfig) come
//     first and nodeadm merges the NodeConfigs, later wins.
//   - Bottlerocket: the user's TOML settings with the cluster, labels,
//     taints and kubelet settings set on top.
//   - Windows: one <powershell> block, the user's script before the call to
//     Start-EKSBootstrap.ps1.
//   - Custom: the user's user data, untouched; the image is on its own.
//
// Malformed spec.userData (a MIME archive without a boundary, TOML that
// does not parse, a NodeConfig part that is not YAML) is an *Error naming
// spec.userData and what is wrong, so the node class reconciler can turn it
// into a condition instead of launching instances that never join.
//
// The package only renders text: it calls no AWS API and reads no cluster
// state. Its inverse, what each AMI's bootstrap makes of the text, lives in
// package bootstrap.
package userdata
