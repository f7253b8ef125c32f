// Package interruption reads the SQS queue named by the INTERRUPTION_QUEUE
// setting, into which EventBridge rules forward EC2 and AWS Health events
// (reference §2.8), and acts on the NodeClaims of the instances they name:
//
//   - spot interruption warning: the spot offering (instance type, zone) is
//     marked unavailable, and the NodeClaim is cordoned and deleted, so the
//     termination path drains it and the provisioner replaces it within
//     the two-minute notice;
//   - scheduled change (AWS Health), instance stopping, stopped,
//     shutting-down or terminated: cordoned and deleted;
//   - capacity reservation interruption: the reserved offering is marked
//     unavailable, and the NodeClaim cordoned and deleted;
//   - rebalance recommendation: an event only.
//
// Beside the queue it polls DescribeInstanceStatus every minute (when
// given an EC2 client): an instance with a pending scheduled event is
// handled as a scheduled change, one whose instance or system status
// check is impaired as an unhealthy instance (cordoned and deleted).
//
// Every message is deleted once handled; a message that does not parse is
// deleted too (it would never parse), and counted. Only NodeClaims of this
// provider's node classes are touched, and the controller never terminates
// instances itself: deleting the NodeClaim hands the instance to the
// termination path, which checks ownership.
package interruption
