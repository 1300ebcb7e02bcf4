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

package clusterctl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	standins "github.com/capm3-preprov/capm3-preprov/test/standins/clusterctl"
)

const (
	providerNamespace = "capm3-preprov-system"
	providerLabelKey  = "cluster.x-k8s.io/provider"
)

func TestInitInstallsTheProvider(t *testing.T) {
	t.Parallel()
	c, kubeconfig := standins.StartBareControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// "-": no bootstrap and no control plane provider, which init would
	// otherwise add (kubeadm) on a cluster without a core provider.
	_, log, err := repo.run(ctx, nil, "init", "--kubeconfig", kubeconfig,
		"--core", "cluster-api:"+capiVersion,
		"--infrastructure", providerName+":"+providerVersion,
		"--bootstrap", "-", "--control-plane", "-")
	require.NoError(t, err)
	assert.Contains(t, log, "Skipping installing cert-manager as it is already installed")

	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "metal3preprovisioningtemplates.infrastructure.cluster.x-k8s.io"}, crd))
	assertProviderLabel(t, crd)
	assert.Equal(t, "v1beta1", crd.Labels["cluster.x-k8s.io/v1beta2"], "the CRD's contract label maps CAPI v1beta2 to our API version")
	// Nothing owns a template: clusterctl move takes them by this label.
	assert.Contains(t, crd.Labels, clusterctlv1.ClusterctlMoveLabel)
	assert.Contains(t, crd.Labels, clusterctlv1.ClusterctlLabel)

	role := &rbacv1.ClusterRole{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "capm3-preprov-manager-role"}, role))
	assertProviderLabel(t, role)
	binding := &rbacv1.ClusterRoleBinding{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "capm3-preprov-manager-rolebinding"}, binding))
	assertProviderLabel(t, binding)
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	require.Len(t, binding.Subjects, 1)
	assert.Equal(t, providerNamespace, binding.Subjects[0].Namespace)

	deployment := &appsv1.Deployment{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: providerNamespace, Name: "capm3-preprov-controller-manager"}, deployment))
	assertProviderLabel(t, deployment)
	require.NotEmpty(t, deployment.Spec.Template.Spec.Containers)
	assert.Equal(t, imageName+":"+providerVersion, deployment.Spec.Template.Spec.Containers[0].Image)

	// Metal3 IPAM lists CAPI's IPAddresses: the core provider brings the CRDs.
	for _, name := range []string{"ipaddresses.ipam.cluster.x-k8s.io", "ipaddressclaims.ipam.cluster.x-k8s.io"} {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}))
	}

	provider := &clusterctlv1.Provider{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: providerNamespace, Name: providerLabel}, provider))
	assert.Equal(t, providerName, provider.ProviderName)
	assert.Equal(t, string(clusterctlv1.InfrastructureProviderType), provider.Type)
	assert.Equal(t, providerVersion, provider.Version)
	assertProviderLabel(t, provider)
	assert.Contains(t, provider.Labels, clusterctlv1.ClusterctlLabel)
}

func assertProviderLabel(t *testing.T, obj client.Object) {
	t.Helper()
	assert.Equal(t, providerLabel, obj.GetLabels()[providerLabelKey], "%T %s", obj, obj.GetName())
}
