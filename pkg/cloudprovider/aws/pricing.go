package aws

//go:generate go run ../../../hack/prices ../../../../shared/reference/aws-on-demand-prices.json zz_generated_prices.go

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/joiner-dev/joiner/pkg/logging"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// staticRegion is the region the generated table was taken in.
const staticRegion = "us-east-1"

// prices holds on-demand prices per instance type and spot prices per
// instance type and zone. It starts from the generated table and is
// replaced by live data whenever a refresh succeeds; a failed refresh keeps
// what it had.
type prices struct {
	region   string
	ec2      EC2API
	pricing  PricingAPI
	isolated bool

	mu       sync.RWMutex
	onDemand map[string]float64
	spot     map[string]map[string]float64 // type -> zone -> price
	gen      atomic.Uint64
	warned   atomic.Bool
	loadMu   sync.Mutex
	loaded   bool
}

// ensureLoaded refreshes once before the first use, so the first instance
// types have spot offerings (spot has no built-in table); a failure is
// logged and left to the timer.
func (p *prices) ensureLoaded(ctx context.Context) {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if p.loaded {
		return
	}
	p.loaded = true
	if err := p.refresh(ctx); err != nil {
		log.FromContext(ctx).Info("price refresh failed; using the built-in on-demand prices and no spot prices until a refresh succeeds", logging.Error, err.Error())
	}
}

func newPrices(region string, e EC2API, p PricingAPI, isolated bool) *prices {
	table, ok := staticOnDemandPrices[region]
	if !ok {
		table = staticOnDemandPrices[staticRegion]
	}
	return &prices{region: region, ec2: e, pricing: p, isolated: isolated, onDemand: table, spot: map[string]map[string]float64{}}
}

// BuiltInOnDemandPrices is a copy of the built-in on-demand price table of
// region (us-east-1's when the region has none): the shared price
// snapshot, generated into the binary. The local EC2's front derives its
// spot prices from it.
func BuiltInOnDemandPrices(region string) map[string]float64 {
	table, ok := staticOnDemandPrices[region]
	if !ok {
		table = staticOnDemandPrices[staticRegion]
	}
	return maps.Clone(table)
}

// warnStatic logs once that a region without its own table borrows
// us-east-1's prices.
func (p *prices) warnStatic(ctx context.Context) {
	if _, ok := staticOnDemandPrices[p.region]; ok || p.warned.Swap(true) {
		return
	}
	log.FromContext(ctx).Info("no built-in on-demand prices for this region; using the us-east-1 table until the Pricing API answers, so launch choices may not be the cheapest here", logging.Region, p.region, logging.Table, staticPricesSource)
}

func (p *prices) generation() uint64 { return p.gen.Load() }

// onDemandPrice returns the on-demand price of an instance type.
func (p *prices) onDemandPrice(it string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.onDemand[it]
	return v, ok
}

// spotPrice returns the latest spot price of an instance type in a zone.
func (p *prices) spotPrice(it, zone string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.spot[it][zone]
	return v, ok
}

// refresh fetches on-demand and spot prices; each part that fails keeps
// its previous data.
func (p *prices) refresh(ctx context.Context) error {
	p.warnStatic(ctx)
	var errs []error
	if p.pricing != nil && !p.isolated {
		od, err := p.fetchOnDemand(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("fetching on-demand prices: %w", err))
		} else if len(od) > 0 {
			p.mu.Lock()
			p.onDemand = od
			p.mu.Unlock()
			p.gen.Add(1)
		}
	}
	spot, err := p.fetchSpot(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("fetching spot prices: %w", err))
	} else if len(spot) > 0 {
		p.mu.Lock()
		p.spot = spot
		p.mu.Unlock()
		p.gen.Add(1)
	}
	return errors.Join(errs...)
}

// fetchOnDemand reads Linux, shared-tenancy, on-demand prices of the
// region from the Pricing API.
func (p *prices) fetchOnDemand(ctx context.Context) (map[string]float64, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	in := &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", p.region),
			filter("operatingSystem", "Linux"),
			filter("tenancy", "Shared"),
			filter("capacitystatus", "Used"),
			filter("preInstalledSw", "NA"),
			filter("marketoption", "OnDemand"),
		},
	}
	out := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p.pricing, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, doc := range page.PriceList {
			it, price, err := parseProduct(doc)
			if err != nil {
				return nil, err
			}
			if it != "" && price > 0 {
				out[it] = price
			}
		}
	}
	return out, nil
}

// parseProduct reads the instance type and hourly USD price of one Pricing
// API product document.
func parseProduct(doc string) (string, float64, error) {
	var product struct {
		Product struct {
			Attributes struct {
				InstanceType string `json:"instanceType"`
			} `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &product); err != nil {
		return "", 0, fmt.Errorf("parsing price list document: %w", err)
	}
	for _, term := range product.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if usd, ok := dim.PricePerUnit["USD"]; ok {
				price, err := strconv.ParseFloat(usd, 64)
				if err != nil {
					return "", 0, fmt.Errorf("parsing price %q of %s: %w", usd, product.Product.Attributes.InstanceType, err)
				}
				return product.Product.Attributes.InstanceType, price, nil
			}
		}
	}
	return product.Product.Attributes.InstanceType, 0, nil
}

// fetchSpot reads the latest Linux spot price per type and zone.
func (p *prices) fetchSpot(ctx context.Context) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	latest := map[string]time.Time{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(time.Now()),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, h := range page.SpotPriceHistory {
			it, zone := string(h.InstanceType), aws.ToString(h.AvailabilityZone)
			price, err := strconv.ParseFloat(aws.ToString(h.SpotPrice), 64)
			if err != nil {
				continue
			}
			key := it + "/" + zone
			if ts := aws.ToTime(h.Timestamp); !ts.Before(latest[key]) {
				latest[key] = ts
				if out[it] == nil {
					out[it] = map[string]float64{}
				}
				out[it][zone] = price
			}
		}
	}
	return out, nil
}

// PricingRefresher refreshes prices on a timer; it runs on the leader.
type PricingRefresher struct{ p *Provider }

// PricingRefresher returns the runnable that keeps prices fresh.
func (p *Provider) PricingRefresher() *PricingRefresher { return &PricingRefresher{p: p} }

// Start refreshes at once, then every Options.PricingRefresh.
func (r *PricingRefresher) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("pricing")
	for {
		if err := r.p.prices.refresh(ctx); err != nil {
			logger.Info("price refresh failed; keeping the previous prices (the built-in table until a refresh succeeds)", logging.Error, err.Error())
		}
		t := r.p.clock.NewTimer(r.p.opts.PricingRefresh)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
