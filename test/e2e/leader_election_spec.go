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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// standbyServiceAccount is the identity of the second manager: its own, so
// the audit log tells the two managers' requests apart.
const standbyServiceAccount = "capm3-preprov-manager-standby"

var standbyUser = framework.ServiceAccountUser(managerNamespace, standbyServiceAccount)

// LeaderElectionSpec: two managers run with leader election, as two
// replicas of the Deployment would. Only the leader writes; when it is
// killed the other takes the Lease over and sets up the pending hosts.
func LeaderElectionSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		requireLocal(input, "runs a second manager and kills the leader")
		namespace = input.Cluster.createNamespace(ctx, "leader-election")
	})

	It("lets only the leader act, and hands over to the other manager when the leader is killed", func() {
		c, local := input.Cluster, input.Cluster.Local
		first, pending := hostNames("first", 4), hostNames("pending", 4)
		c.createWorkerTemplate(ctx, namespace, 241)

		By("Starting a second manager with an identity of its own, bound to the same roles")
		kubeconfig := c.bindStandbyIdentity(ctx)
		standby := local.NewManagerProcess("manager-standby", kubeconfig,
			"--webhook-port=0", "--leader-elect", "--leader-election-namespace="+managerNamespace)
		managers := map[string]*framework.ManagerProcess{managerUser: local.Manager, standbyUser: standby}
		since := time.Now()
		Expect(standby.Start()).To(Succeed())
		DeferCleanup(standby.Stop)

		By("Finding the leader: the identity that renews the Lease")
		var leader string
		Eventually(func(g Gomega) {
			leader = leaseWriter(g, local.AuditLog, since)
			g.Expect(leader).NotTo(BeEmpty(), "no manager has renewed the leader election Lease")
			g.Expect(holder(c.leaderLease(ctx, g))).NotTo(BeEmpty())
		}).Should(Succeed())
		follower := standbyUser
		if leader == standbyUser {
			follower = managerUser
		}

		By("Registering hosts: only the leader writes")
		c.create(ctx, newHosts(namespace, first, 0, workers)...)
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, first, bothPools) }).Should(Succeed())
		events, err := readAuditLog(local.AuditLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(selectEvents(events, byUser(leader), inNamespace(namespace), writeRequests)).NotTo(BeEmpty())
		Expect(selectEvents(events, byUser(follower), receivedAfter(since), writeRequests)).To(BeEmpty(),
			"%s is not the leader and wrote", follower)

		By("Killing the leader with SIGKILL and registering more hosts")
		heldBy := holder(c.leaderLease(ctx, Default))
		killed := time.Now()
		Expect(managers[leader].Kill()).To(Succeed())
		c.create(ctx, newHosts(namespace, pending, len(first), workers)...)

		By("Waiting for the other manager to take the Lease over and set the pending hosts up")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, pending, bothPools) }).Should(Succeed())
		Expect(holder(c.leaderLease(ctx, Default))).NotTo(Equal(heldBy))
		events, err = readAuditLog(local.AuditLog)
		Expect(err).NotTo(HaveOccurred())
		Expect(leaseWriter(Default, local.AuditLog, killed)).To(Equal(follower))
		handedOver := selectEvents(events, inNamespace(namespace), receivedAfter(killed), writeRequests)
		Expect(handedOver).NotTo(BeEmpty())
		for _, event := range handedOver {
			Expect(event.User.Username).To(Equal(follower), "%s %s/%s", event.Verb, event.ObjectRef.Resource, event.ObjectRef.Name)
		}
	})
}

// bindStandbyIdentity creates a second ServiceAccount in the manager's
// namespace, binds it to the manager's ClusterRole and leader election Role
// as config/default binds the first, and returns a kubeconfig for it. The
// objects are deleted when the spec ends.
func (c *Cluster) bindStandbyIdentity(ctx context.Context) string {
	GinkgoHelper()
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: managerNamespace, Name: standbyServiceAccount}}
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: standbyServiceAccount}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: standbyServiceAccount},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: managerClusterRole},
			Subjects:   subjects,
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: standbyServiceAccount},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaderElectionRole},
			Subjects:   subjects,
		},
	}
	c.create(ctx, objects...)
	DeferCleanup(func(ctx context.Context) {
		for _, obj := range objects {
			Expect(client.IgnoreNotFound(c.Client.Delete(ctx, obj))).To(Succeed())
		}
	})
	kubeconfig, err := c.Local.ControlPlane.ServiceAccountKubeconfig(managerNamespace, standbyServiceAccount)
	Expect(err).NotTo(HaveOccurred())
	return kubeconfig
}

// leaseWriter is the identity that last created or renewed the leader
// election Lease since a moment: the leader.
func leaseWriter(g Gomega, auditLog string, since time.Time) string {
	events, err := readAuditLog(auditLog)
	g.Expect(err).NotTo(HaveOccurred())
	writer := ""
	for _, event := range selectEvents(events, receivedAfter(since), writeRequests, inNamespace(managerNamespace)) {
		if event.on("leases") && event.ObjectRef.Name == leaderElectionLease && event.succeeded() {
			writer = event.User.Username
		}
	}
	return writer
}
