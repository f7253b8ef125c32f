package localec2

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Front sits between aws-sdk-go-v2 and moto (as an http.RoundTripper, or
// behind a FrontProxy) and answers the EC2 requests where moto differs from
// EC2 the way EC2 does, so the provider meets the failures and figures of
// a real account:
//
//   - subnet free addresses: moto counts them down as instances launch but
//     crashes (a 500 with half a fleet launched) when one runs out; the front
//     refuses launches into a subnet without room with EC2's own
//     InsufficientFreeAddressesInSubnet (front_subnets.go);
//   - DescribeLaunchTemplates pagination: moto returns its first 15
//     templates and no NextToken; the front pages with MaxResults and
//     NextToken as EC2 does (front_launchtemplates.go);
//   - the architecture filter of DescribeInstanceTypes: moto matches
//     processor-info.supported-architecture against the whole list, so
//     t2.nano to t2.medium (i386 and x86_64) never match x86_64; the front
//     filters by membership, as EC2 does (front_instancetypes.go);
//   - spot prices: moto prices every spot offering at $0.00001; the front
//     answers prices derived from the on-demand price snapshot it is given
//     (front_spotprices.go; imitated, see the README);
//   - EKS access entries and the cluster's authenticationMode, which moto
//     lacks ("Not yet implemented"): the front keeps them per cluster
//     (front_eks.go; imitated, see the README).
//
// Every other request goes to Next untouched.
type Front struct {
	Next http.RoundTripper
	// SpotPrice is the spot price of an instance type in a zone; nil, or
	// false for a type, leaves moto's answer for it.
	SpotPrice func(instanceType, zone string) (float64, bool)

	eksState eksState
}

// FrontOptions configure NewFront.
type FrontOptions struct {
	// OnDemandPrices are $/h per instance type (the shared price snapshot,
	// as the AWS provider's built-in table holds it); spot prices are
	// derived from them. Empty leaves moto's spot prices.
	OnDemandPrices map[string]float64
}

// NewFront returns a front over next (nil: http.DefaultTransport).
func NewFront(next http.RoundTripper, opts FrontOptions) *Front {
	if next == nil {
		next = http.DefaultTransport
	}
	f := &Front{Next: next}
	if len(opts.OnDemandPrices) > 0 {
		f.SpotPrice = DerivedSpotPrices(opts.OnDemandPrices)
	}
	return f
}

// RoundTrip implements http.RoundTripper.
func (f *Front) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp, err := f.eks(req); resp != nil || err != nil {
		return resp, err
	}
	form, ok := ec2Form(req)
	if !ok {
		return f.Next.RoundTrip(req)
	}
	switch form.Get("Action") {
	case "CreateFleet":
		return f.createFleet(req, form)
	case "RunInstances":
		return f.runInstances(req, form)
	case "DescribeLaunchTemplates":
		return f.describeLaunchTemplates(req, form)
	case "DescribeInstanceTypes":
		return f.describeInstanceTypes(req, form)
	case "DescribeSpotPriceHistory":
		return f.describeSpotPriceHistory(req, form)
	}
	return f.Next.RoundTrip(req)
}

// forward sends form to Next as req's replacement (same URL and headers;
// moto does not check signatures) and reads the whole answer.
func (f *Front) forward(req *http.Request, form url.Values) (*http.Response, []byte, error) {
	body := form.Encode()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(strings.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Del("Content-Length")
	resp, err := f.Next.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// forwardSet sends form to Next and decodes the answer's set (see
// readItems) into into, returning the answer's nextToken. An answer that is
// not 200 OK comes back as refused, for the caller to hand on as it is.
func (f *Front) forwardSet(req *http.Request, form url.Values, set string, into any) (refused *http.Response, nextToken string, err error) {
	resp, b, err := f.forward(req, form)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return passThrough(resp, b), "", nil
	}
	if err := readItems(b, set, into); err != nil {
		return nil, "", err
	}
	return nil, nextTokenOf(b), nil
}

// passThrough is resp with body b put back.
func passThrough(resp *http.Response, b []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp
}

// rawItem is one <item> of an EC2 answer's set, kept as its raw XML.
type rawItem struct {
	Inner string `xml:",innerxml"`
}

// readItems decodes the element named set of an EC2 answer into into (a
// struct whose field tagged xml:"item" collects the set's items).
func readItems(b []byte, set string, into any) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("reading %s: %w", set, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == set {
			return dec.DecodeElement(into, &se)
		}
	}
}

// nextTokenOf is the answer's top-level nextToken, "" when none.
func nextTokenOf(b []byte) string {
	var v struct {
		NextToken string `xml:"nextToken"`
	}
	_ = xml.Unmarshal(b, &v)
	return v.NextToken
}

// itemsAnswer is an EC2 answer named action holding items in set, with a
// nextToken when there are more.
func itemsAnswer(action, set string, items []string, nextToken string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><%sResponse xmlns="http://ec2.amazonaws.com/doc/%s/"><requestId>local-front</requestId><%s>`, action, ec2APIVersion, set)
	for _, it := range items {
		b.WriteString("<item>")
		b.WriteString(it)
		b.WriteString("</item>")
	}
	fmt.Fprintf(&b, "</%s>", set)
	if nextToken != "" {
		fmt.Fprintf(&b, "<nextToken>%s</nextToken>", html.EscapeString(nextToken))
	}
	fmt.Fprintf(&b, "</%sResponse>", action)
	return b.String()
}

// renumber rewrites the indexed parameters prefix.N.* of form so that only
// the indexes keep says survive, numbered from 1 in their order.
func renumber(form url.Values, prefix string, keep []int) url.Values {
	out := url.Values{}
	newIndex := map[int]int{}
	for i, k := range keep {
		newIndex[k] = i + 1
	}
	for key, vals := range form {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			out[key] = vals
			continue
		}
		num, tail, _ := strings.Cut(rest, ".")
		var n int
		if _, err := fmt.Sscanf(num, "%d", &n); err != nil {
			out[key] = vals
			continue
		}
		if to, ok := newIndex[n]; ok {
			k := fmt.Sprintf("%s.%d", prefix, to)
			if tail != "" {
				k += "." + tail
			}
			out[k] = vals
		}
	}
	return out
}
