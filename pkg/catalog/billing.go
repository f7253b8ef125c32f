package catalog

import (
	"strings"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// What EC2 bills beside an instance's hourly price, as facts per type and
// per volume type: the one home for them, read by the built-in catalog (so
// the simulated cloud and `joiner simulate`) and by the AWS provider.
//
// Source: AWS's published prices for us-east-1, Linux (EC2 User Guide,
// "Key concepts for burstable performance instances" for the baselines;
// "Unlimited mode for burstable performance instances" and the EC2 and EBS
// pricing pages for surplus credits and volumes).

// surplusPerVCPUHour is what a surplus CPU credit costs, per vCPU-hour
// above the baseline, by burstable family launched in unlimited mode (EC2's
// default for T3, T3a and T4g; T2 defaults to standard mode, where the CPU
// is throttled at the baseline instead of billed, so it has no entry).
var surplusPerVCPUHour = map[string]float64{"t3": 0.05, "t3a": 0.05, "t4g": 0.04}

// baselinePercent is the baseline CPU utilisation per vCPU of the
// burstable sizes, the same in T3, T3a and T4g.
var baselinePercent = map[string]int64{
	"nano": 5, "micro": 10, "small": 20, "medium": 20, "large": 30, "xlarge": 40, "2xlarge": 40,
}

// Burst is the unlimited-mode credit model of instance type name with vcpus
// vCPUs, nil when the type is not burstable in unlimited mode by default.
func Burst(name string, vcpus int64) *scheduling.Burst {
	family, size, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	rate, ok := surplusPerVCPUHour[family]
	if !ok {
		return nil
	}
	pct, ok := baselinePercent[size]
	if !ok {
		return nil
	}
	return &scheduling.Burst{BaselineMilliCPU: vcpus * 10 * pct, SurplusPerVCPUHour: rate}
}

// HoursPerMonth converts EBS's per GiB-month prices to hourly ones (AWS
// bills a month as 730 hours).
const HoursPerMonth = 730

// volumePerGiBMonth is EBS's price per GiB-month by volume type.
var volumePerGiBMonth = map[string]float64{
	"gp3": 0.08, "gp2": 0.10, "io1": 0.125, "io2": 0.125, "st1": 0.045, "sc1": 0.015, "standard": 0.05,
}

// DefaultVolumeType is the type of a volume that names none (the EC2NodeClass
// default and the built-in catalog's root volume).
const DefaultVolumeType = "gp3"

// VolumePrice is what an EBS volume of volumeType (DefaultVolumeType when
// empty) and gib GiB costs per hour, and false for a type with no known
// price. Provisioned IOPS and throughput above gp3's included ones are not
// counted.
func VolumePrice(volumeType string, gib int64) (float64, bool) {
	if volumeType == "" {
		volumeType = DefaultVolumeType
	}
	p, ok := volumePerGiBMonth[volumeType]
	if !ok {
		return 0, false
	}
	return p * float64(gib) / HoursPerMonth, true
}
