/*
Copyright The capm3-preprov Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package clusterctl_test installs capm3-preprov with clusterctl, from a local
// clusterctl repository built by hack/release-manifests.sh, on a real
// kube-apiserver, and checks that the objects its cluster templates generate
// are accepted by the API server.
package clusterctl_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	standins "github.com/capm3-preprov/capm3-preprov/test/standins/clusterctl"
)

const (
	capiVersion     = standins.CAPIVersion
	providerVersion = "v0.1.0"
	// providerLabel is how clusterctl names our provider: in the repository
	// layout, the inventory and the cluster.x-k8s.io/provider label.
	providerLabel = "infrastructure-metal3-preprov"
	providerName  = "metal3-preprov"
	// imageName:providerVersion is the manager image the release sets.
	imageName = "quay.io/capm3-preprov/capm3-preprov"
)

// repo is the local clusterctl repository every test uses, built once.
var repo *localRepository

func TestMain(m *testing.M) {
	if os.Getenv(managerProcessEnv) != "" {
		os.Exit(runManagerProcess())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if err := framework.UseKubeBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "clusterctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if removeErr := os.RemoveAll(dir); removeErr != nil {
			fmt.Fprintln(os.Stderr, removeErr)
		}
	}()
	if repo, err = buildLocalRepository(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
