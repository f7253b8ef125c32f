package localec2

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// codeSubnetFull is EC2's error code for a launch into a subnet without
// enough free addresses.
const codeSubnetFull = "InsufficientFreeAddressesInSubnet"

// subnetFullMessage is EC2's message for codeSubnetFull.
func subnetFullMessage(subnet string) string {
	return fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", subnet)
}

// freeAddresses is each named subnet's AvailableIpAddressCount as moto
// keeps it (it counts addresses down as instances launch). Subnets moto
// does not know are left out: the launch then fails in moto with EC2's
// InvalidSubnetID.NotFound.
func (f *Front) freeAddresses(req *http.Request, subnets []string) (map[string]int, error) {
	form := url.Values{"Action": {"DescribeSubnets"}, "Version": {ec2APIVersion}}
	for i, s := range subnets {
		form.Set(fmt.Sprintf("SubnetId.%d", i+1), s)
	}
	resp, b, err := f.forward(req, form)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	if resp.StatusCode != http.StatusOK {
		// One unknown subnet fails the whole call: ask one by one.
		if len(subnets) == 1 {
			return out, nil
		}
		for _, s := range subnets {
			one, err := f.freeAddresses(req, []string{s})
			if err != nil {
				return nil, err
			}
			for k, v := range one {
				out[k] = v
			}
		}
		return out, nil
	}
	var set struct {
		Items []struct {
			ID   string `xml:"subnetId"`
			Free int    `xml:"availableIpAddressCount"`
		} `xml:"item"`
	}
	if err := readItems(b, "subnetSet", &set); err != nil {
		return nil, err
	}
	for _, it := range set.Items {
		out[it.ID] = it.Free
	}
	return out, nil
}

// fleetSlot is one override of a CreateFleet request with its subnet.
type fleetSlot struct {
	config, override int
	launchTemplate   string
	instanceType     string
	subnet           string
}

// fleetSlots lists a CreateFleet form's overrides in request order.
func fleetSlots(form url.Values) []fleetSlot {
	var out []fleetSlot
	for c := 1; ; c++ {
		cp := fmt.Sprintf("LaunchTemplateConfigs.%d.", c)
		lt := form.Get(cp + "LaunchTemplateSpecification.LaunchTemplateName")
		if lt == "" {
			lt = form.Get(cp + "LaunchTemplateSpecification.LaunchTemplateId")
		}
		if lt == "" {
			return out
		}
		for o := 1; ; o++ {
			op := fmt.Sprintf("%sOverrides.%d.", cp, o)
			if !form.Has(op+"InstanceType") && !form.Has(op+"SubnetId") {
				break
			}
			out = append(out, fleetSlot{config: c, override: o, launchTemplate: lt, instanceType: form.Get(op + "InstanceType"), subnet: form.Get(op + "SubnetId")})
		}
	}
}

// fleetErrorItem is one item of a CreateFleet answer's errorSet.
func fleetErrorItem(lt, instanceType, subnet, lifecycle, code, msg string) string {
	return fmt.Sprintf(`<item><launchTemplateAndOverrides><launchTemplateSpecification><launchTemplateName>%s</launchTemplateName><version>1</version></launchTemplateSpecification><overrides><instanceType>%s</instanceType><subnetId>%s</subnetId></overrides></launchTemplateAndOverrides><lifecycle>%s</lifecycle><errorCode>%s</errorCode><errorMessage>%s</errorMessage></item>`,
		lt, instanceType, subnet, lifecycle, code, msg)
}

// createFleet holds a CreateFleet to its subnets' free addresses, as EC2
// does: overrides into a subnet with no free address are not tried and are
// reported InsufficientFreeAddressesInSubnet; the rest launch at most as
// many instances as their fullest subnet has room for (all or nothing under
// MinTargetCapacity); with no override left nothing launches.
func (f *Front) createFleet(req *http.Request, form url.Values) (*http.Response, error) {
	slots := fleetSlots(form)
	var subnets []string
	seen := map[string]bool{}
	for _, s := range slots {
		if s.subnet != "" && !seen[s.subnet] {
			seen[s.subnet] = true
			subnets = append(subnets, s.subnet)
		}
	}
	if len(subnets) == 0 {
		return f.Next.RoundTrip(req)
	}
	free, err := f.freeAddresses(req, subnets)
	if err != nil {
		return nil, err
	}
	target, _ := strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	lifecycle := form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	room := target
	var kept, dropped []fleetSlot
	for _, s := range slots {
		n, known := free[s.subnet]
		if known && n < 1 {
			dropped = append(dropped, s)
			continue
		}
		kept = append(kept, s)
		if known {
			room = min(room, n)
		}
	}
	minTarget := 0
	for _, k := range []string{"OnDemandOptions.MinTargetCapacity", "SpotOptions.MinTargetCapacity"} {
		if v, err := strconv.Atoi(form.Get(k)); err == nil {
			minTarget = max(minTarget, v)
		}
	}
	var errs []string
	for _, s := range dropped {
		errs = append(errs, fleetErrorItem(s.launchTemplate, s.instanceType, s.subnet, lifecycle, codeSubnetFull, subnetFullMessage(s.subnet)))
	}
	if len(kept) == 0 || room < minTarget {
		for _, s := range kept {
			errs = append(errs, fleetErrorItem(s.launchTemplate, s.instanceType, s.subnet, lifecycle, codeSubnetFull, subnetFullMessage(s.subnet)))
		}
		return xmlResponse(req, http.StatusOK, fleetAnswer(errs)), nil
	}
	if len(dropped) == 0 && room >= target {
		return f.Next.RoundTrip(req)
	}
	if room < target {
		for _, s := range kept {
			if n, ok := free[s.subnet]; ok && n < target {
				errs = append(errs, fleetErrorItem(s.launchTemplate, s.instanceType, s.subnet, lifecycle, codeSubnetFull, subnetFullMessage(s.subnet)))
			}
		}
	}
	forward := form
	byConfig := map[int][]int{}
	for _, s := range kept {
		byConfig[s.config] = append(byConfig[s.config], s.override)
	}
	for c := 1; form.Has(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c)) || form.Has(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateId", c)); c++ {
		forward = renumber(forward, fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides", c), byConfig[c])
	}
	forward.Set("TargetCapacitySpecification.TotalTargetCapacity", strconv.Itoa(room))
	for _, k := range []string{"TargetCapacitySpecification.OnDemandTargetCapacity", "TargetCapacitySpecification.SpotTargetCapacity"} {
		if v, err := strconv.Atoi(forward.Get(k)); err == nil && v > room {
			forward.Set(k, strconv.Itoa(room))
		}
	}
	resp, b, err := f.forward(req, forward)
	if err != nil || resp.StatusCode != http.StatusOK {
		if err != nil {
			return nil, err
		}
		return passThrough(resp, b), nil
	}
	return passThrough(resp, []byte(withFleetErrors(string(b), errs))), nil
}

// fleetAnswer is a CreateFleet answer that launched nothing, with errs.
func fleetAnswer(errs []string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>local-front</requestId><fleetId>fleet-local-front</fleetId><errorSet>` +
		strings.Join(errs, "") + `</errorSet><fleetInstanceSet></fleetInstanceSet></CreateFleetResponse>`
}

// withFleetErrors adds errs to a CreateFleet answer's errorSet.
func withFleetErrors(answer string, errs []string) string {
	if len(errs) == 0 {
		return answer
	}
	items := strings.Join(errs, "")
	switch {
	case strings.Contains(answer, "</errorSet>"):
		return strings.Replace(answer, "</errorSet>", items+"</errorSet>", 1)
	case strings.Contains(answer, "<errorSet/>"):
		return strings.Replace(answer, "<errorSet/>", "<errorSet>"+items+"</errorSet>", 1)
	default:
		return strings.Replace(answer, "</CreateFleetResponse>", "<errorSet>"+items+"</errorSet></CreateFleetResponse>", 1)
	}
}

// runInstances refuses a RunInstances whose subnet has fewer free
// addresses than MinCount, with EC2's error, and launches at most as many
// as there are free addresses.
func (f *Front) runInstances(req *http.Request, form url.Values) (*http.Response, error) {
	subnet := form.Get("SubnetId")
	if subnet == "" {
		subnet = form.Get("NetworkInterface.1.SubnetId")
	}
	if subnet == "" {
		return f.Next.RoundTrip(req)
	}
	free, err := f.freeAddresses(req, []string{subnet})
	if err != nil {
		return nil, err
	}
	n, known := free[subnet]
	minCount, _ := strconv.Atoi(form.Get("MinCount"))
	maxCount, _ := strconv.Atoi(form.Get("MaxCount"))
	switch {
	case !known || n >= maxCount:
		return f.Next.RoundTrip(req)
	case n < max(minCount, 1):
		return xmlResponse(req, http.StatusBadRequest, ec2Error(codeSubnetFull, subnetFullMessage(subnet))), nil
	}
	forward := url.Values{}
	for k, v := range form {
		forward[k] = v
	}
	forward.Set("MaxCount", strconv.Itoa(n))
	resp, b, err := f.forward(req, forward)
	if err != nil {
		return nil, err
	}
	return passThrough(resp, b), nil
}
