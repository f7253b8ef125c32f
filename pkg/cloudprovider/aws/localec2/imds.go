package localec2

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// InstanceMetadata is what an instance's metadata service answers: the
// identity document, the primary interface's MAC and the user data.
type InstanceMetadata struct {
	InstanceID, InstanceType, ImageID, Region, AvailabilityZone, Architecture string
	PrivateIP, MAC                                                            string
	// UserData is the decoded user data (nil: the instance has none, and
	// the service answers 404 as EC2's does).
	UserData []byte
}

// MetadataOf reads what the metadata service of instance id would answer
// from the local EC2: DescribeInstances and the userData attribute.
func MetadataOf(ctx context.Context, e *ec2.Client, region, id string) (*InstanceMetadata, error) {
	out, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return nil, fmt.Errorf("describing instance %s: %w", id, err)
	}
	var inst *ec2types.Instance
	for _, r := range out.Reservations {
		for i := range r.Instances {
			inst = &r.Instances[i]
		}
	}
	if inst == nil {
		return nil, fmt.Errorf("describing instance %s: not found", id)
	}
	md := &InstanceMetadata{
		InstanceID: id, InstanceType: string(inst.InstanceType), ImageID: aws.ToString(inst.ImageId), Region: region,
		Architecture: string(inst.Architecture), PrivateIP: aws.ToString(inst.PrivateIpAddress),
	}
	if inst.Placement != nil {
		md.AvailabilityZone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	for _, ni := range inst.NetworkInterfaces {
		if ni.Attachment != nil && aws.ToInt32(ni.Attachment.DeviceIndex) == 0 || md.MAC == "" {
			md.MAC = aws.ToString(ni.MacAddress)
		}
	}
	attr, err := e.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: ec2types.InstanceAttributeNameUserData})
	if err != nil {
		return nil, fmt.Errorf("reading the user data of instance %s: %w", id, err)
	}
	if attr.UserData != nil && attr.UserData.Value != nil {
		if md.UserData, err = base64.StdEncoding.DecodeString(aws.ToString(attr.UserData.Value)); err != nil {
			return nil, fmt.Errorf("decoding the user data of instance %s: %w", id, err)
		}
	}
	return md, nil
}

// IMDS is one instance's metadata service (IMDSv2: a token from PUT
// /latest/api/token, then GETs) on a loopback port. moto has none; the
// images' own tools (nodeadm) read their configuration and identity from
// it, so the local EC2 serves the paths they read. Point a process at it
// with AWS_EC2_METADATA_SERVICE_ENDPOINT=Endpoint.
type IMDS struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:40124.
	Endpoint string
	srv      *http.Server
}

// imdsToken is the one session token this service hands out and accepts.
const imdsToken = "joiner-local-imds-token"

// ServeIMDS starts the metadata service of md; Close stops it.
func ServeIMDS(md InstanceMetadata) (*IMDS, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the instance metadata service: %w", err)
	}
	s := &IMDS{Endpoint: "http://" + l.Addr().String(), srv: &http.Server{Handler: imdsHandler(md), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the service.
func (s *IMDS) Close() error { return s.srv.Close() }

func imdsHandler(md InstanceMetadata) http.Handler {
	identity, _ := json.Marshal(map[string]string{
		"accountId": motoAccountID, "architecture": md.Architecture, "availabilityZone": md.AvailabilityZone,
		"imageId": md.ImageID, "instanceId": md.InstanceID, "instanceType": md.InstanceType,
		"privateIp": md.PrivateIP, "region": md.Region, "version": "2017-09-30",
	})
	meta := map[string]string{
		"instance-id": md.InstanceID, "instance-type": md.InstanceType, "ami-id": md.ImageID, "mac": md.MAC,
		"local-ipv4": md.PrivateIP, "placement/availability-zone": md.AvailabilityZone, "placement/region": md.Region,
		"services/domain": "amazonaws.com", "services/partition": "aws",
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			if r.Method != http.MethodPut {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds"))
			_, _ = w.Write([]byte(imdsToken))
			return
		}
		// IMDSv2 only, as EKS-optimised launch templates require
		// (httpTokens: required).
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != imdsToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch p := r.URL.Path; {
		case p == "/latest/user-data":
			if md.UserData == nil {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write(md.UserData)
		case p == "/latest/dynamic/instance-identity/document":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(identity)
		case strings.HasPrefix(p, "/latest/meta-data/"):
			v, ok := meta[strings.TrimPrefix(p, "/latest/meta-data/")]
			if !ok || v == "" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(v))
		default:
			http.NotFound(w, r)
		}
	})
}

// motoAccountID is the account moto_server answers as by default.
const motoAccountID = "123456789012"
