package userdata

import (
	"fmt"
	"strings"
)

// windows renders one <powershell> block: the user's PowerShell (its own
// <powershell> tags removed), then the call to Start-EKSBootstrap.ps1.
// EC2Launch runs only the first <powershell> block, so the user's script
// has to be inside joiner's.
func windows(o Options) (string, error) {
	var user string
	if o.CustomUserData != nil {
		user = strings.TrimSpace(*o.CustomUserData)
		opens, closes := strings.Count(user, "<powershell>"), strings.Count(user, "</powershell>")
		if opens != closes || opens > 1 {
			return "", userErr(o.AMIFamily, "found %d <powershell> and %d </powershell> tags; give one PowerShell script, with or without a single <powershell>...</powershell> pair", opens, closes)
		}
		user = strings.TrimSpace(strings.NewReplacer("<powershell>", "", "</powershell>", "").Replace(user))
	}
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if user != "" {
		b.WriteString(user + "\n")
	}
	b.WriteString("[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA '%s'", o.CABundle)
	}
	if flags := kubeletFlags(&o); len(flags) > 0 {
		fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", strings.Join(flags, " "))
	}
	if dns := o.clusterDNS(); dns != "" {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", dns)
	}
	b.WriteString("\n</powershell>\n")
	return b.String(), nil
}
