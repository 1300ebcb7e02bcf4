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
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

var bothPools = []string{fixtures.ProvisioningPool, fixtures.StoragePool}

// workers are the labels of the hosts createWorkerTemplate's template selects.
var workers = map[string]string{"role": "worker"}

// createWorkerTemplate creates the provisioning and storage pools, with
// poolSize addresses each, and the opted-in Metal3MachineTemplate "workers"
// (and its Metal3DataTemplate) that gives the hosts labelled workers the
// two-pool network data.
func (c *Cluster) createWorkerTemplate(ctx context.Context, namespace string, poolSize int) {
	GinkgoHelper()
	c.create(ctx, fixtures.TwoPools(namespace, poolSize)...)
	c.create(ctx, machineTemplate(namespace, "workers", workers, fixtures.TwoPoolNetworkData())...)
}

// registration is a host as a user registers it, with its BMC credentials
// Secret (which the manager must never read).
type registration struct {
	Host        *bmov1alpha1.BareMetalHost
	Credentials *corev1.Secret
}

// objects are what to create, the Secret first.
func (r registration) objects() []client.Object {
	return []client.Object{r.Credentials, r.Host}
}

// newHost registers a host for preprovisioning: paused with our value, with
// its boot MAC and its storage MAC annotation (fixtures.TwoPoolNetworkData).
func newHost(namespace, name string, index int, labels map[string]string) registration {
	host := fixtures.Host(namespace, name, fixtures.MAC(namespace, 1, index), labels)
	host.Annotations[fixtures.StorageMACAnnotation] = fixtures.MAC(namespace, 2, index)
	// BMC addresses are unique on a cluster, like the hosts they manage.
	host.Spec.BMC.Address = "redfish-virtualmedia+https://192.0.2.1:8000/redfish/v1/Systems/" + namespace + "-" + name
	return registration{Host: host, Credentials: fixtures.BMCCredentials(host)}
}

// hostNames are prefix-0 .. prefix-(n-1).
func hostNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names
}

// newHosts registers each named host with the same labels; first is the
// index of the first one's MACs.
func newHosts(namespace string, names []string, first int, labels map[string]string) []client.Object {
	var objects []client.Object
	for i, name := range names {
		objects = append(objects, newHost(namespace, name, first+i, labels).objects()...)
	}
	return objects
}

// machineTemplate is an opted-in Metal3MachineTemplate and its
// Metal3DataTemplate, both named name.
func machineTemplate(namespace, name string, selector map[string]string, networkData *capm3.NetworkData) []client.Object {
	return []client.Object{
		fixtures.DataTemplate(namespace, name, networkData),
		fixtures.MachineTemplate(namespace, name, name, selector),
	}
}

// createNamespace creates a namespace of the spec's own; on an existing
// cluster it is deleted when the spec ends. The local control plane has no
// namespace controller to finish a deletion, and is thrown away anyway.
func (c *Cluster) createNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(c.Client.Create(ctx, namespace)).To(Succeed())
	if c.Local == nil {
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Client.Delete(ctx, namespace))).To(Succeed())
		})
	}
	return namespace.Name
}

// create creates objects, in order.
func (c *Cluster) create(ctx context.Context, objects ...client.Object) {
	GinkgoHelper()
	for _, obj := range objects {
		Expect(c.Client.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}
}

// getHost reads a host from the API server.
func (c *Cluster) getHost(ctx context.Context, g Gomega, namespace, name string) *bmov1alpha1.BareMetalHost {
	host := &bmov1alpha1.BareMetalHost{}
	g.Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host)).To(Succeed())
	return host
}

// patchHost changes a host with a merge patch.
func (c *Cluster) patchHost(ctx context.Context, namespace, name string, change func(*bmov1alpha1.BareMetalHost)) {
	GinkgoHelper()
	host := c.getHost(ctx, Default, namespace, name)
	original := host.DeepCopy()
	change(host)
	Expect(c.Client.Patch(ctx, host, client.MergeFrom(original))).To(Succeed())
}

// growPool adds addresses to a pool's range.
func (c *Cluster) growPool(ctx context.Context, namespace, name, end string) {
	GinkgoHelper()
	pool := &ipamv1.IPPool{}
	Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pool)).To(Succeed())
	original := pool.DeepCopy()
	pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr(end))
	Expect(c.Client.Patch(ctx, pool, client.MergeFrom(original))).To(Succeed())
}
