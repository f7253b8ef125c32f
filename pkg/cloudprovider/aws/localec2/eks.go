package localec2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// DefaultServiceCIDR is the seeded EKS cluster's service CIDR: the local
// control plane's (pkg/controlplane), so the cluster DNS address nodeadm
// derives from it is the local cluster's.
const DefaultServiceCIDR = "10.96.0.0/16"

// EKSNetwork is an EKS cluster's kubernetesNetworkConfig as DescribeCluster
// answers it.
type EKSNetwork struct {
	// IPFamily is ipv4 (default) or ipv6.
	IPFamily        string `json:"ipFamily,omitempty"`
	ServiceIPv4CIDR string `json:"serviceIpv4Cidr,omitempty"`
	ServiceIPv6CIDR string `json:"serviceIpv6Cidr,omitempty"`
}

// CreateEKSCluster creates the EKS cluster name in moto, whose
// DescribeCluster then answers with network. EKS's CreateCluster request
// cannot carry serviceIpv6Cidr (EKS picks it); moto keeps whatever
// kubernetesNetworkConfig it is sent, so the request is written and signed
// here rather than through the SDK's typed input.
func CreateEKSCluster(ctx context.Context, cfg aws.Config, name, roleARN string, subnets []string, network EKSNetwork) error {
	body, err := json.Marshal(map[string]any{
		"name": name, "roleArn": roleARN, "version": "1.36",
		"resourcesVpcConfig":      map[string]any{"subnetIds": subnets},
		"kubernetesNetworkConfig": network,
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(aws.ToString(cfg.BaseEndpoint), "/")+"/clusters", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("creating EKS cluster %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("creating EKS cluster %s: %w", name, err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "eks", cfg.Region, time.Now()); err != nil {
		return fmt.Errorf("creating EKS cluster %s: signing: %w", name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("creating EKS cluster %s: %w", name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("creating EKS cluster %s: %s: %s", name, resp.Status, msg)
	}
	return nil
}
