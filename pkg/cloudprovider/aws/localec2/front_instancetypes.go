package localec2

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// filterArchitecture is the DescribeInstanceTypes filter moto gets wrong.
const filterArchitecture = "processor-info.supported-architecture"

// describeInstanceTypes applies the processor-info.supported-architecture
// filter as EC2 does, by membership: an instance type matches when any of
// its supported architectures is among the filter's values. moto compares
// the whole list, so t2.nano to t2.medium (i386 and x86_64) never matched
// x86_64. The front asks moto without that filter (the others stay) and
// keeps the types that match.
func (f *Front) describeInstanceTypes(req *http.Request, form url.Values) (*http.Response, error) {
	var archs []string
	var keep []int
	for i := 1; form.Has(fmt.Sprintf("Filter.%d.Name", i)); i++ {
		if form.Get(fmt.Sprintf("Filter.%d.Name", i)) != filterArchitecture {
			keep = append(keep, i)
			continue
		}
		for v := 1; form.Has(fmt.Sprintf("Filter.%d.Value.%d", i, v)); v++ {
			archs = append(archs, form.Get(fmt.Sprintf("Filter.%d.Value.%d", i, v)))
		}
	}
	if archs == nil {
		return f.Next.RoundTrip(req)
	}
	var set struct {
		Items []struct {
			Inner string   `xml:",innerxml"`
			Archs []string `xml:"processorInfo>supportedArchitectures>item"`
		} `xml:"item"`
	}
	refused, next, err := f.forwardSet(req, renumber(form, "Filter", keep), "instanceTypeSet", &set)
	if refused != nil || err != nil {
		return refused, err
	}
	var items []string
	for _, it := range set.Items {
		if slices.ContainsFunc(it.Archs, func(a string) bool { return slices.Contains(archs, a) }) {
			items = append(items, it.Inner)
		}
	}
	return xmlResponse(req, http.StatusOK, itemsAnswer("DescribeInstanceTypes", "instanceTypeSet", items, next)), nil
}
