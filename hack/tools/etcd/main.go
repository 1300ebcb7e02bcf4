// Command etcd builds the etcd server from go.etcd.io/etcd/server/v3 at the
// version pinned in this module's go.mod, for use by envtest / local tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
