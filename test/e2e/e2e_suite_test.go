//go:build e2e

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

// Package e2e is the end-to-end suite of capm3-preprov. By default it starts
// a local control plane, installs what `kustomize build config/default`
// gives users (without what needs pods), and runs bin/manager as its own
// process under the identity of its ServiceAccount; with
// -e2e.use-existing-cluster it runs the same user stories against a cluster
// where clusterctl installed CAPM3, BMO, Metal3 IPAM and capm3-preprov.
// docs/e2e.md says how to run it.
package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// Flags, prefixed e2e. as in Cluster API's test framework.
var (
	useExistingCluster bool
	kubeconfigPath     string
	managerBinary      string
	artifactFolder     string
)

func init() {
	flag.BoolVar(&useExistingCluster, "e2e.use-existing-cluster", false,
		"Run against the cluster of -e2e.kubeconfig, where clusterctl installed CAPM3, BMO, Metal3 IPAM and capm3-preprov, "+
			"instead of starting a local control plane; the specs that kill local processes are skipped.")
	flag.StringVar(&kubeconfigPath, "e2e.kubeconfig", "", "The kubeconfig of the existing cluster (default: $KUBECONFIG or ~/.kube/config).")
	flag.StringVar(&managerBinary, "e2e.manager", filepath.Join(framework.RepoRoot(), "bin", "manager"),
		"The manager binary the local mode runs (go build -o bin/manager .).")
	flag.StringVar(&artifactFolder, "e2e.artifacts-folder", filepath.Join(framework.RepoRoot(), "out", "e2e"),
		"Where the manager logs, the kube-apiserver log and audit log, and the installed manifests are written.")
}

var (
	ctx = context.Background()
	// cluster is what every spec runs against.
	cluster *Cluster
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "capm3-preprov e2e")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.Level(zapcore.ErrorLevel)))
	Expect(os.MkdirAll(artifactFolder, 0o755)).To(Succeed())
	sayf("Artifacts (manager logs, kube-apiserver log and audit log, installed manifests): %s", artifactFolder)

	var err error
	if useExistingCluster {
		By("Connecting to the existing cluster")
		cluster, err = ConnectToExistingCluster(kubeconfigPath)
	} else {
		By("Starting the local control plane, the IPAM stand-in and the manager")
		cluster, err = StartLocalCluster(ctx, LocalClusterInput{ManagerBinary: managerBinary, ArtifactFolder: artifactFolder})
	}
	Expect(err).NotTo(HaveOccurred())

	SetDefaultEventuallyTimeout(cluster.Intervals.Converge)
	SetDefaultEventuallyPollingInterval(cluster.Intervals.Poll)
	SetDefaultConsistentlyDuration(cluster.Intervals.Quiet)
	SetDefaultConsistentlyPollingInterval(cluster.Intervals.Poll)
})

var _ = AfterSuite(func() {
	if cluster != nil && cluster.Local != nil {
		By("Stopping the manager, the IPAM stand-in and the local control plane")
		Expect(cluster.Local.Stop()).To(Succeed())
	}
	sayf("Artifacts: %s", artifactFolder)
})
