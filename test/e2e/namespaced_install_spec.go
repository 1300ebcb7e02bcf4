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
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// namespacedOverlayNamespace is the namespace config/namespaced installs
// into; a tenant changes it to its own.
const namespacedOverlayNamespace = "metal3"

// NamespacedInstallSpec: the multi-tenant install of config/namespaced. The
// manager runs as its namespace's ServiceAccount with only a Role and
// --namespace: it sets up the hosts of its namespace, never touches another
// namespace, and RBAC never refuses it.
func NamespacedInstallSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input         SpecInput
		tenant, other string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		requireLocal(input, "runs a namespace-scoped manager process")
		tenant = input.Cluster.createNamespace(ctx, "tenant")
		other = input.Cluster.createNamespace(ctx, "other-tenant")
	})

	It("sets up the hosts of its namespace with only a Role, and leaves other namespaces alone", func() {
		c, local := input.Cluster, input.Cluster.Local
		By("Installing config/namespaced into the tenant's namespace")
		objects, err := framework.KustomizeBuild(ctx, "namespaced", filepath.Join(local.ArtifactFolder, "config-namespaced.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var installed []*unstructured.Unstructured
		for _, obj := range objects {
			Expect(obj.GetKind()).NotTo(BeElementOf("ClusterRole", "ClusterRoleBinding"), "config/namespaced grants cluster-wide: %s", obj.GetName())
			if needsPods[obj.GetKind()] {
				continue
			}
			Expect(moveToNamespace(obj, tenant)).To(Succeed())
			installed = append(installed, obj)
		}
		Expect(applyObjects(ctx, c.Client, installed)).To(Succeed())

		By("Checking that its ServiceAccount may do nothing outside its namespace")
		Expect(c.managerAccountMay(ctx, tenant, "list", "metal3.io", "baremetalhosts", other)).To(BeFalse())
		Expect(c.managerAccountMay(ctx, tenant, "list", "", "secrets", "")).To(BeFalse())
		Expect(c.managerAccountMay(ctx, tenant, "patch", "metal3.io", "baremetalhosts", tenant)).To(BeTrue())

		By("Stopping the cluster-wide manager, which would serve the tenant's hosts too, and starting the tenant's")
		Expect(local.Manager.Stop()).To(Succeed())
		kubeconfig, err := local.ControlPlane.ServiceAccountKubeconfig(tenant, managerServiceAccount)
		Expect(err).NotTo(HaveOccurred())
		tenantManager := local.NewManagerProcess("manager-namespaced", kubeconfig,
			"--namespace="+tenant, "--leader-elect", "--webhook-port=0")
		since := time.Now()
		Expect(tenantManager.Start()).To(Succeed())
		DeferCleanup(tenantManager.Stop)

		By("Registering hosts in the tenant's namespace and in another one")
		tenantHosts := hostNames("worker", 2)
		for _, namespace := range []string{tenant, other} {
			c.createWorkerTemplate(ctx, namespace, 241)
		}
		c.create(ctx, newHosts(tenant, tenantHosts, 0, workers)...)
		c.create(ctx, newHost(other, "elsewhere", len(tenantHosts), workers).objects()...)

		By("Waiting for the tenant's hosts to be set up, while the other namespace's host stays untouched")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, tenant, tenantHosts, bothPools) }).Should(Succeed())
		Consistently(func(g Gomega) { c.expectUntouched(ctx, g, other, "elsewhere", preprovv1.PausedForPreprovisioning) }).Should(Succeed())

		By("Checking from the audit log that it stayed in its namespace and RBAC never refused it")
		events, err := readAuditLog(local.AuditLog)
		Expect(err).NotTo(HaveOccurred())
		requests := selectEvents(events, byUser(framework.ServiceAccountUser(tenant, managerServiceAccount)), receivedAfter(since))
		Expect(requests).NotTo(BeEmpty())
		for _, event := range requests {
			if event.ObjectRef != nil {
				Expect(event.ObjectRef.Namespace).To(Equal(tenant), "%s %s", event.Verb, event.RequestURI)
			}
		}
		Expect(forbidden(requests)).To(BeEmpty(), "requests of the namespaced manager that RBAC refused")
	})
}

// moveToNamespace moves an object of config/namespaced, and the
// ServiceAccount subjects of a RoleBinding, into namespace.
func moveToNamespace(obj *unstructured.Unstructured, namespace string) error {
	if obj.GetNamespace() != "" {
		obj.SetNamespace(namespace)
	}
	if obj.GetKind() != "RoleBinding" {
		return nil
	}
	subjects, _, err := unstructured.NestedSlice(obj.Object, "subjects")
	if err != nil {
		return err
	}
	for _, item := range subjects {
		subject, ok := item.(map[string]any)
		if ok && subject["kind"] == rbacv1.ServiceAccountKind && subject["namespace"] == namespacedOverlayNamespace {
			subject["namespace"] = namespace
		}
	}
	return unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
}
