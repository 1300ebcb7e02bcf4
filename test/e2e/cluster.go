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

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// The install of config/default: the manager's namespace, ServiceAccount
// and RBAC objects, as kustomize names them.
const (
	managerNamespace      = "capm3-preprov-system"
	managerServiceAccount = "capm3-preprov-manager"
	managerClusterRole    = "capm3-preprov-manager-role"
	leaderElectionRole    = "capm3-preprov-leader-election-role"
	leaderElectionLease   = "capm3-preprov-leader-election"
)

// managerUser is the user name of the manager's ServiceAccount, the subject
// of the ClusterRoleBinding of config/default.
var managerUser = framework.ServiceAccountUser(managerNamespace, managerServiceAccount)

// Cluster is what the specs run against, like Cluster API's ClusterProxy.
type Cluster struct {
	// Client is an administrator's client.
	Client client.WithWatch
	// Local is the local control plane and the processes the suite runs;
	// nil on an existing cluster.
	Local     *LocalCluster
	Intervals Intervals
}

// SpecInput is what every spec gets, like the inputs of Cluster API's specs.
type SpecInput struct {
	Cluster *Cluster
}

// ConnectToExistingCluster reaches a cluster where capm3-preprov and its
// dependencies are already installed; the suite starts nothing.
func ConnectToExistingCluster(kubeconfig string) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig of the existing cluster: %w", err)
	}
	c, err := client.NewWithWatch(config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, err
	}
	return &Cluster{Client: c, Intervals: existingIntervals}, nil
}

// requireLocal skips a spec that stops or kills local processes on an
// existing cluster, and restores the local processes when the spec ends.
func requireLocal(input SpecInput, what string) {
	if input.Cluster.Local == nil {
		Skip(what + ": the suite runs no local processes on an existing cluster (-e2e.use-existing-cluster)")
	}
	DeferCleanup(func() { Expect(input.Cluster.Local.EnsureRunning()).To(Succeed()) })
}

// sayf prints a line about the suite itself (what runs, where the artifacts
// are), whatever Ginkgo's verbosity.
func sayf(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// Intervals are the waits of the specs: a real cluster with BMO and Ironic
// is slower than the local control plane.
type Intervals struct {
	// Converge bounds the wait for a few hosts to be set up, including a new
	// leader waiting out the lease of a killed one (15 s).
	Converge time.Duration
	// Fleet bounds the wait for a fleet of hundreds of hosts.
	Fleet time.Duration
	// Poll is how often a condition is checked.
	Poll time.Duration
	// Quiet is how long "stays untouched" is watched once the manager has
	// shown it acted on the namespace: long enough for a few reconciles,
	// short enough to keep the suite fast.
	Quiet time.Duration
}

var (
	localIntervals    = Intervals{Converge: 2 * time.Minute, Fleet: 5 * time.Minute, Poll: 250 * time.Millisecond, Quiet: 3 * time.Second}
	existingIntervals = Intervals{Converge: 10 * time.Minute, Fleet: 30 * time.Minute, Poll: 2 * time.Second, Quiet: 20 * time.Second}
)
