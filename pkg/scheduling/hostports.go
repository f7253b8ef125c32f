package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// hostPort is one port a pod binds on its node's network.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

func (h hostPort) String() string { return fmt.Sprintf("%s/%s:%d", h.ip, h.protocol, h.port) }

// podHostPorts lists the host ports of a pod's containers.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, cp := range c.Ports {
				if cp.HostPort <= 0 {
					continue
				}
				h := hostPort{ip: cp.HostIP, protocol: cp.Protocol, port: cp.HostPort}
				if h.protocol == "" {
					h.protocol = corev1.ProtocolTCP
				}
				if h.ip == "" {
					h.ip = "0.0.0.0"
				}
				out = append(out, h)
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	return out
}

// portsConflict reports whether any of want clashes with used: same port
// and protocol on the same address, or either on every address.
func portsConflict(want, used []hostPort) bool {
	for _, w := range want {
		for _, u := range used {
			if w.port == u.port && w.protocol == u.protocol && (w.ip == u.ip || w.ip == "0.0.0.0" || u.ip == "0.0.0.0") {
				return true
			}
		}
	}
	return false
}

// typesFreeOfDaemonPorts narrows types to those of pool p on which no
// DaemonSet pod binds one of ports. When the pod binds a port on every one
// of them, it returns that port (the first) as the clash; types is returned
// unchanged when ports is empty.
func (p *poolT) typesFreeOfDaemonPorts(types bitset, ports []hostPort) (bitset, *hostPort) {
	if len(ports) == 0 {
		return types, nil
	}
	free := make(bitset, len(types))
	var clash *hostPort
	found := false
	for i := range p.types {
		if !types.has(i) {
			continue
		}
		conflict := false
		for j := range ports {
			if portsConflict(ports[j:j+1], p.daemonPorts[i]) {
				conflict = true
				if clash == nil {
					clash = &ports[j]
				}
				break
			}
		}
		if !conflict {
			free.set(i)
			found = true
		}
	}
	if found || types.empty() {
		return free, nil
	}
	return free, clash
}
