// Package localec2 runs a local AWS for joiner: it starts moto_server (the
// Python moto 5.x server, which speaks the real EC2, IAM, SSM, SQS and EKS
// wire protocols) on a free loopback port, hands out an aws.Config that
// points aws-sdk-go-v2 at it, and seeds the AWS side of a cluster the way
// an EKS user's account looks: a VPC, three subnets in three zones and a
// security group tagged karpenter.sh/discovery=<cluster>, a node IAM role,
// and AL2023, AL2 and Bottlerocket images for x86_64 and arm64 published
// under SSM parameters shaped like the public EKS ones.
//
// moto reserves the /aws/ parameter namespace, so the images are published
// under a configurable root (DefaultParameterRoot) and the provider's SSM
// parameter root setting must name it.
//
// StartSeeded does both, the setup every AWS test suite shares. moto never
// throttles, runs out of capacity or loses an answer: FaultInjector (an
// http.RoundTripper) and FaultProxy (a loopback HTTP proxy for another
// process's AWS_ENDPOINT_URL) add those in EC2's own error shapes, and
// give launches the ClientToken idempotency moto lacks. Front (and
// FrontProxy) answers as EC2 where moto's answers differ: subnets that run
// out of addresses, launch template pages, the architecture filter, and spot
// prices derived from the on-demand price snapshot. PlacementFront (in
// front of it in FrontProxy) serves what moto lacks entirely: capacity
// reservations and placement groups, and holds launches to them.
//
// The package never decides anything about nodes; it only stands up the
// cloud the provider talks to. Tests and `joiner run --local-ec2` use it.
package localec2
