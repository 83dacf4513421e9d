// Command etcd is the etcd server used by envtest and `release-controller dev`,
// built from the official Go module so that nothing has to be downloaded.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
