package operator

// The permissions joiner needs beyond what each controller declares beside
// its own code: leader election, the provisioner's inputs and outputs, and
// the simulated cloud (its node class status and the cluster identity it
// reads from kube-system), and the AWS provider (EC2NodeClass status, hash
// annotation and termination finalizer). `make generate` folds these markers and the
// controllers' into config/rbac/role.yaml.
//
// The leader election Lease is the one namespaced permission: a Role in the
// Lease's namespace (kube-system here; the Helm chart binds it in its release
// namespace), read and written with get, create and update only.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kube-system
//
// The controller view (pkg/controllerview) is a ConfigMap in the same
// namespace as the Lease, written with get, create and update only.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update,namespace=kube-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=create
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=sim.joiner.dev,resources=simnodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=sim.joiner.dev,resources=simnodeclasses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/status,verbs=get;update;patch
