// Package e2e drives the AWS provider against a local EC2 (moto_server,
// started by localec2 on a free port) and a real kube-apiserver: node class
// resolution, instance types, launches through CreateFleet with tags and
// launch templates, identity-checked Get/List/Delete, and the provider's
// answers to insufficient capacity, exhausted subnets, throttling and
// server errors injected on the wire. It also counts the EC2 calls per
// launched node and per reconcile. It holds tests only.
package e2e
