package localec2

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
)

// Spot discounts the front derives, as shares of the on-demand price:
// real spot prices sit mostly between 30% and 70% of on-demand and differ
// by type and zone.
const (
	spotShareMin = 0.30
	spotShareMax = 0.70
)

// DerivedSpotPrices prices the spot offering of an instance type in a zone
// at a share of its on-demand price (onDemand, $/h: the shared price
// snapshot) between spotShareMin and spotShareMax, fixed per type and zone
// by a hash of the two. The on-demand prices are facts; the spot prices
// are imitated (EC2's spot market moves, this does not), but they keep
// its shape: a type's spot price is well below its on-demand price and
// differs by zone. Types without an on-demand price have none.
func DerivedSpotPrices(onDemand map[string]float64) func(instanceType, zone string) (float64, bool) {
	return func(instanceType, zone string) (float64, bool) {
		od, ok := onDemand[instanceType]
		if !ok || od <= 0 {
			return 0, false
		}
		sum := sha256.Sum256([]byte(instanceType + "/" + zone))
		share := spotShareMin + (spotShareMax-spotShareMin)*float64(binary.BigEndian.Uint32(sum[:4]))/math.MaxUint32
		return math.Round(od*share*1e6) / 1e6, true
	}
}

var spotPriceElement = regexp.MustCompile(`<spotPrice>[^<]*</spotPrice>`)

// describeSpotPriceHistory answers with the front's spot prices in place
// of moto's $0.00001 for every type and zone moto lists; types without a
// price are left out, so they have no spot offering.
func (f *Front) describeSpotPriceHistory(req *http.Request, form url.Values) (*http.Response, error) {
	if f.SpotPrice == nil {
		return f.Next.RoundTrip(req)
	}
	var set struct {
		Items []struct {
			Inner string `xml:",innerxml"`
			Type  string `xml:"instanceType"`
			Zone  string `xml:"availabilityZone"`
		} `xml:"item"`
	}
	refused, next, err := f.forwardSet(req, form, "spotPriceHistorySet", &set)
	if refused != nil || err != nil {
		return refused, err
	}
	var items []string
	for _, it := range set.Items {
		price, ok := f.SpotPrice(it.Type, it.Zone)
		if !ok {
			continue
		}
		items = append(items, spotPriceElement.ReplaceAllString(it.Inner, fmt.Sprintf("<spotPrice>%.6f</spotPrice>", price)))
	}
	return xmlResponse(req, http.StatusOK, itemsAnswer("DescribeSpotPriceHistory", "spotPriceHistorySet", items, next)), nil
}
