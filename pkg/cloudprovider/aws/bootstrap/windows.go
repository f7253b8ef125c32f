package bootstrap

import (
	"errors"
	"fmt"
	"strings"
)

// parseWindows reads the first <powershell> block, as EC2Launch runs it,
// and the arguments of its call to Start-EKSBootstrap.ps1 (directly or
// through a variable holding its path).
func parseWindows(s string) (*Kubelet, error) {
	start := strings.Index(s, "<powershell>")
	end := strings.Index(s, "</powershell>")
	if start < 0 || end < start {
		return nil, errors.New("EC2Launch finds no <powershell>...</powershell> block in the user data, so the EKS bootstrap never runs")
	}
	script := s[start+len("<powershell>") : end]
	var scriptVar string
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, "=")
		if ok && strings.Contains(value, "Start-EKSBootstrap.ps1") {
			scriptVar = strings.TrimSpace(name[strings.LastIndex(name, "]")+1:])
			continue
		}
		if !strings.HasPrefix(line, "&") {
			continue
		}
		words, err := powershellWords(strings.TrimSpace(strings.TrimPrefix(line, "&")))
		if err != nil {
			return nil, fmt.Errorf("PowerShell cannot parse %q: %w", line, err)
		}
		if len(words) == 0 || !(strings.Contains(words[0], "Start-EKSBootstrap.ps1") || (scriptVar != "" && words[0] == scriptVar)) {
			continue
		}
		return runStartEKSBootstrap(words[1:])
	}
	return nil, errors.New("the <powershell> block never calls Start-EKSBootstrap.ps1, so the kubelet is never configured")
}

func runStartEKSBootstrap(args []string) (*Kubelet, error) {
	params := map[string]string{}
	for i := 0; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		name := strings.ToLower(strings.TrimPrefix(args[i], "-"))
		if i+1 < len(args) {
			params[name] = args[i+1]
			i++
		}
	}
	k := &Kubelet{ClusterName: params["eksclustername"], APIServerEndpoint: params["apiserverendpoint"]}
	if k.ClusterName == "" {
		return nil, errors.New("Start-EKSBootstrap.ps1: -EKSClusterName is required")
	}
	if extra := params["kubeletextraargs"]; extra != "" {
		words, err := splitWords(extra)
		if err != nil {
			return nil, fmt.Errorf("kubelet cannot parse -KubeletExtraArgs %q: %w", extra, err)
		}
		if err := k.applyFlags(words); err != nil {
			return nil, fmt.Errorf("kubelet exits at start: %w", err)
		}
	}
	return k, nil
}

// powershellWords splits a PowerShell command line into words: single
// quotes are literal (” is a quote), double quotes group, whitespace
// separates.
func powershellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\'':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, errors.New("unterminated single quote")
				}
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						cur.WriteByte('\'')
						i++
						continue
					}
					break
				}
				cur.WriteByte(s[i])
			}
		case '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, errors.New("unterminated double quote")
				}
				if s[i] == '"' {
					break
				}
				cur.WriteByte(s[i])
			}
		case ' ', '\t', '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
