// Command etcd is the etcd server used by joiner's local control plane. It is
// built by hack/controlplane.sh from the etcd server module on the Go module
// proxy and does nothing but hand its arguments to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
