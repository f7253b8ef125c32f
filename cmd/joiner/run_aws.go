package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/nodeadm"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// localAWS is the local EC2 of `joiner run --cloud-provider=aws
// --local-ec2`: moto_server seeded like an EKS user's account, the SDK
// pointed at it, and the emulated machines that boot its instances into
// kwok Nodes.
type localAWS struct {
	server *localec2.Server
	// front is what joiner and the emulated machines talk to: moto behind
	// the front that answers as EC2 where moto does not (subnet addresses,
	// launch template pages, architecture filters, spot prices).
	front   *localec2.FrontProxy
	cluster *localec2.Cluster
	nodes   *bootstrap.Nodes
	// reservation and placementGroup are the demo node class's capacity
	// reservation and placement group, which the front holds.
	reservation, placementGroup string
}

// The demo's capacity reservation: two m5.large in the first subnet's zone,
// tagged for discovery, so its NodePool (which takes reserved capacity)
// fills them first.
const (
	localReservationType  = "m5.large"
	localReservationCount = 2
)

// localAWSCapacityTypes are the AWS demo NodePool's: the reservation first,
// then spot and on-demand.
var localAWSCapacityTypes = []string{v1.CapacityTypeReserved, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}

// startLocalAWS starts and seeds the local EC2 and points the settings and
// the process's AWS SDK configuration at it (AWS_ENDPOINT_URL, AWS_REGION
// and static credentials, as a user would set them).
func startLocalAWS(ctx context.Context, s *story, runDir string, settings *options.Options, kube client.Client, apiServer string) (*localAWS, error) {
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{LogPath: filepath.Join(runDir, "moto_server.log")}, localec2.SeedOptions{ClusterName: settings.ClusterName})
	if err != nil {
		return nil, err
	}
	front, err := localec2.StartFrontProxy(srv.Endpoint, localec2.FrontOptions{OnDemandPrices: awsprovider.BuiltInOnDemandPrices(localec2.Region)})
	if err != nil {
		_ = srv.Stop()
		return nil, err
	}
	l := &localAWS{server: srv, front: front, cluster: cl}
	if err := l.seed(ctx, settings, kube, apiServer); err != nil {
		_ = l.stop()
		return nil, err
	}
	s.sayf("local EC2 (moto_server behind joiner's EC2 front) at %s: VPC %s, %d subnets and security group %s tagged %s=%s, node role %s mapped in kube-system/aws-auth, interruption queue %s (log: %s)",
		front.Endpoint, l.cluster.VPCID, len(l.cluster.Subnets), l.cluster.SecurityGroupID, localec2.TagDiscovery, settings.ClusterName,
		l.cluster.RoleName, settings.InterruptionQueue, srv.LogPath())
	s.sayf("capacity reservation %s (%d %s in %s, targeted) and partition placement group %s, both selected by EC2NodeClass/%s",
		l.reservation, localReservationCount, localReservationType, l.cluster.Subnets[0].Zone, l.placementGroup, demoNodeClass)
	s.sayf("to use it from another shell (the aws CLI, joiner doctor --cloud-provider=aws, joiner controller):\n%s", localAWSEnv(front.Endpoint, settings))
	return l, nil
}

// localAWSEnv is the environment that points the AWS SDK (and joiner's
// subcommands) at the local EC2 and this cluster, one export per line.
func localAWSEnv(endpoint string, settings *options.Options) string {
	return strings.Join([]string{
		"  export AWS_ENDPOINT_URL=" + endpoint,
		"  export AWS_REGION=" + localec2.Region,
		"  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true",
		"  export CLUSTER_NAME=" + settings.ClusterName + " SSM_PARAMETER_ROOT=" + settings.SSMParameterRoot,
	}, "\n")
}

// seed maps the seeded node role, creates the interruption queue and
// points the settings and the SDK at the local EC2.
func (l *localAWS) seed(ctx context.Context, settings *options.Options, kube client.Client, apiServer string) error {
	cfg, cl := localec2.Config(l.front.Endpoint, localec2.Region), l.cluster
	role, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(cl.RoleName)})
	if err != nil {
		return fmt.Errorf("reading node role %s: %w", cl.RoleName, err)
	}
	if err := bootstrap.MapNodeRole(ctx, kube, aws.ToString(role.Role.Arn)); err != nil {
		return err
	}
	if settings.InterruptionQueue == "" {
		settings.InterruptionQueue = settings.ClusterName + "-interruptions"
	}
	if _, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(settings.InterruptionQueue)}); err != nil {
		return fmt.Errorf("creating interruption queue %s: %w", settings.InterruptionQueue, err)
	}
	if err := l.seedPlacement(ctx, ec2.NewFromConfig(cfg), settings.ClusterName); err != nil {
		return err
	}
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": l.front.Endpoint, "AWS_REGION": localec2.Region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("pointing the AWS SDK at the local EC2: %w", err)
		}
	}
	settings.ClusterEndpoint = apiServer
	settings.SSMParameterRoot = cl.ParameterRoot
	// moto has no Pricing API: use the built-in price table (spot prices
	// come from the front, derived from the same table).
	settings.IsolatedVPC = true
	// The AL2023 image's own nodeadm judges user data when one is built
	// (make nodeadm; JOINER_NODEADM=bin/nodeadm).
	l.nodes, err = bootstrap.New(bootstrap.Options{
		Client: kube, EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg),
		ClusterName: settings.ClusterName, Region: localec2.Region, Nodeadm: os.Getenv(nodeadm.EnvBinary),
	})
	return err
}

// seedPlacement creates the demo's capacity reservation and placement
// group through the front, as a user would with the aws CLI.
func (l *localAWS) seedPlacement(ctx context.Context, api *ec2.Client, cluster string) error {
	res, err := api.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String(localReservationType), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(l.cluster.Subnets[0].Zone), InstanceCount: aws.Int32(localReservationCount),
		InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation,
			Tags: []ec2types.Tag{{Key: aws.String(localec2.TagDiscovery), Value: aws.String(cluster)}}}},
	})
	if err != nil {
		return fmt.Errorf("creating the demo's capacity reservation: %w", err)
	}
	l.reservation = aws.ToString(res.CapacityReservation.CapacityReservationId)
	l.placementGroup = cluster + "-nodes"
	if _, err := api.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName: aws.String(l.placementGroup), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(2),
	}); err != nil {
		return fmt.Errorf("creating the demo's placement group: %w", err)
	}
	return nil
}

// run plays the machines until ctx ends.
func (l *localAWS) run(ctx context.Context, logger logr.Logger) {
	_ = l.nodes.Start(log.IntoContext(ctx, logger.WithName("local-ec2")))
}

func (l *localAWS) stop() error {
	return errors.Join(l.front.Close(), l.server.Stop())
}

// interrupt sends what EventBridge would for nc's instance to the
// interruption queue: an EC2 Spot Instance Interruption Warning for a spot
// instance, else an AWS Health scheduled change (an instance retirement).
func (l *localAWS) interrupt(ctx context.Context, queue string, nc *v1.NodeClaim) (string, error) {
	id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
	event := map[string]any{
		"version": "0", "id": string(nc.UID), "source": "aws.ec2", "detail-type": "EC2 Spot Instance Interruption Warning",
		"time": time.Now().UTC().Format(time.RFC3339), "region": localec2.Region, "resources": []string{"arn:aws:ec2:" + localec2.Region + ":instance/" + id},
		"detail": map[string]any{"instance-id": id, "instance-action": "terminate"},
	}
	what := "an EC2 Spot Instance Interruption Warning (instance " + id + ")"
	if nc.Labels[v1.LabelCapacityType] != v1.CapacityTypeSpot {
		event["source"], event["detail-type"] = "aws.health", "AWS Health Event"
		event["detail"] = map[string]any{"service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED", "eventTypeCategory": "scheduledChange",
			"affectedEntities": []map[string]string{{"entityValue": id}}}
		what = "an AWS Health scheduled change (instance " + id + " retirement)"
	}
	body, err := json.Marshal(event)
	if err != nil {
		return "", err
	}
	client := sqs.NewFromConfig(localec2.Config(l.front.Endpoint, localec2.Region))
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	if err != nil {
		return "", fmt.Errorf("finding interruption queue %s: %w", queue, err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(string(body))}); err != nil {
		return "", fmt.Errorf("sending the interruption warning: %w", err)
	}
	return what, nil
}

// nodeClass is the demo's EC2NodeClass: AL2023 by alias, the seeded
// subnets and security group by their discovery tag, the seeded node role.
func (l *localAWS) nodeClass(cluster string) (client.Object, *v1.NodeClassReference) {
	discovery := map[string]string{localec2.TagDiscovery: cluster}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: demoNodeClass},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:                 []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:              []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms:       []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			CapacityReservationSelectorTerms: []awsv1.CapacityReservationSelectorTerm{{Tags: discovery}},
			PlacementGroupSelector:           &awsv1.PlacementGroupSelector{Name: l.placementGroup},
			Role:                             l.cluster.RoleName,
		},
	}
	return nc, &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: demoNodeClass}
}

// errAWSNeedsLocalEC2 explains why `joiner run` cannot use a real account.
var errAWSNeedsLocalEC2 = errors.New("joiner run --cloud-provider=aws needs --local-ec2: instances of a real AWS account cannot join the local control plane (use `joiner controller` against an EKS cluster instead)")
