package sim

import (
	"fmt"
	"strings"
)

// ProviderName is the simulated cloud's name and provider-ID scheme.
const ProviderName = "sim"

// providerID formats sim:///<zone>/<instance-id>.
func providerID(zone, id string) string {
	return ProviderName + ":///" + zone + "/" + id
}

// ParseProviderID splits sim:///<zone>/<instance-id>.
func ParseProviderID(pid string) (zone, id string, err error) {
	rest, ok := strings.CutPrefix(pid, ProviderName+":///")
	if !ok {
		return "", "", fmt.Errorf("provider ID %q is not of the form %s:///<zone>/<instance-id>", pid, ProviderName)
	}
	zone, id, ok = strings.Cut(rest, "/")
	if !ok || zone == "" || id == "" || strings.Contains(id, "/") {
		return "", "", fmt.Errorf("provider ID %q is not of the form %s:///<zone>/<instance-id>", pid, ProviderName)
	}
	return zone, id, nil
}
