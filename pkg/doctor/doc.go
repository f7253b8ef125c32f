// Package doctor is the preflight behind `joiner doctor`: it reads a live
// cluster (and the AWS account when one is configured) and finds the
// mistakes the troubleshooting seeds cost people hours over, before any
// node is launched: joiner's own pods on nodes it manages, a custom
// userData whose kubelet never registers the unregistered or startup
// taints, a node role neither aws-auth nor an access entry maps, images of
// an architecture no allowed instance type has, another controller using
// this clusterName, NodePools no instance type can serve, subnets running
// out of addresses, pods without requests, in-tree volumes and Windows
// builds no image provides.
//
// Gathering (Gather) is kept apart from judging: each check is a small pure
// function from Inputs to Findings, one line each with its fix, so every
// check has a table test and the command only prints. Doctor never
// changes the cluster or the account.
//
// It judges with the code the controllers and the emulated machines use
// (the solver for instance types, the userdata renderer and the bootstrap
// parser for userData, bootstrap.Authorize for aws-auth), never with a
// second copy of their rules.
package doctor
