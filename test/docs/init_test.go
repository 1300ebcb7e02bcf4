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

package docs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	standins "github.com/capm3-preprov/capm3-preprov/test/standins/clusterctl"
)

// checkInit runs a clusterctl init command on a bare control plane of its
// own and checks what clusterctl recorded and installed (on a bare one, init
// adds the core and kubeadm providers to those it names). The Metal3, Metal3 IPAM and Cluster API
// providers are stand-ins (test/standins/clusterctl): their objects are
// installed, but no controller runs, ours included.
func (d *docEnvironment) checkInit(t *testing.T, command docCommand, text string) {
	t.Helper()
	c, kubeconfig := standins.StartBareControlPlane(t)
	// The last KUBECONFIG wins.
	env := append(slices.Clone(d.kubectlEnv), "KUBECONFIG="+kubeconfig)
	runBash(t, command, d.clusterctlDir, env, text)
	want := append([]string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm"}, initProviders(text)...)

	ctx := t.Context()
	providers := &clusterctlv1.ProviderList{}
	require.NoError(t, c.List(ctx, providers))
	var installed []string
	for _, provider := range providers.Items {
		installed = append(installed, provider.Name)
	}
	assert.ElementsMatch(t, want, installed, "%s: clusterctl's inventory", command)

	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "metal3preprovisioningtemplates.infrastructure.cluster.x-k8s.io"},
		&apiextensionsv1.CustomResourceDefinition{}), "%s: our CRD", command)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "capm3-preprov-system", Name: "capm3-preprov-controller-manager"},
		&appsv1.Deployment{}), "%s: our Deployment", command)
	if slices.Contains(want, "infrastructure-metal3") {
		preallocation := "false"
		if strings.Contains(text, "ENABLE_BMH_NAME_BASED_PREALLOCATION=true ") {
			preallocation = "true"
		}
		capm3 := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "capm3-system", Name: "capm3-controller-manager"}, capm3))
		require.NotEmpty(t, capm3.Spec.Template.Spec.Containers)
		assert.Contains(t, capm3.Spec.Template.Spec.Containers[0].Args, "--enable-bmh-name-based-preallocation="+preallocation,
			"%s: CAPM3's flag from the clusterctl variable", command)
	}
}

// initProviders are the inventory names of the providers a clusterctl init
// command names with --infrastructure and --ipam.
func initProviders(command string) []string {
	var names []string
	words := strings.Fields(command)
	for i := 0; i+1 < len(words); i++ {
		prefix := map[string]string{"--infrastructure": "infrastructure-", "--ipam": "ipam-"}[words[i]]
		if prefix == "" {
			continue
		}
		for _, name := range strings.Split(words[i+1], ",") {
			names = append(names, prefix+name)
		}
	}
	return names
}
