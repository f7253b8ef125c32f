// Package e2e runs `joiner doctor` against the real local control plane and
// a local EC2 (moto_server) into which every problem it looks for is
// seeded. It holds only tests.
package e2e
