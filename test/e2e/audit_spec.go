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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// ManagerAuditSpec checks, from the API server's audit log, what the
// manager really does with Secrets and whether its RBAC covers every
// request it makes. It restarts the manager so the log holds its start-up
// requests (the initial lists and watches, leader election), then sets
// hosts up that have BMC credentials Secrets.
func ManagerAuditSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
		hosts     []string
		requests  []auditEvent
	)
	BeforeAll(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		if input.Cluster.Local == nil {
			Skip("reads the API server's audit log, which the suite only configures on its local control plane")
		}
		c, local := input.Cluster, input.Cluster.Local
		DeferCleanup(func() { Expect(local.EnsureRunning()).To(Succeed()) })
		namespace = c.createNamespace(ctx, "audit")
		hosts = hostNames("worker", 3)

		By("Restarting the manager, so the audit log holds its start-up requests")
		since := time.Now()
		Expect(local.Manager.Stop()).To(Succeed())
		Expect(local.Manager.Start()).To(Succeed())

		By("Setting hosts up next to their BMC credentials Secrets and an unrelated Secret")
		c.createWorkerTemplate(ctx, namespace, 241)
		c.create(ctx, newHosts(namespace, hosts, 0, workers)...)
		c.create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "unrelated", Labels: map[string]string{"app": "other"}},
			StringData: map[string]string{"token": "secret"},
		})
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools) }).Should(Succeed())

		events, err := readAuditLog(local.AuditLog)
		Expect(err).NotTo(HaveOccurred())
		requests = selectEvents(events, byUser(managerUser), receivedAfter(since))
	})

	It("never reads a BMC credentials Secret, nor any Secret but its own", func() {
		for _, host := range hosts {
			Expect(selectEvents(requests, secretRead(host+"-bmc-secret"))).To(BeEmpty(), "the manager read the BMC credentials of %s", host)
		}
		for _, event := range selectEvents(requests, func(e auditEvent) bool { return e.on("secrets") && e.Verb == "get" }) {
			Expect(event.ObjectRef.Name).To(HaveSuffix(preprovv1.NetworkDataSecretSuffix), "the manager read Secret %s/%s",
				event.ObjectRef.Namespace, event.ObjectRef.Name)
		}
	})

	It("lists and watches Secrets only with its label selector", func() {
		managedSelector := preprovv1.ManagedLabel + "=" + preprovv1.ManagedLabelValue
		listsAndWatches := selectEvents(requests, func(e auditEvent) bool {
			return e.on("secrets") && (e.Verb == "list" || e.Verb == "watch")
		})
		// client-go streams the initial list through the watch
		// (sendInitialEvents), so a start may make no list at all.
		Expect(listsAndWatches).To(ContainElement(HaveField("Verb", "watch")))
		for _, event := range listsAndWatches {
			Expect(strings.Split(event.labelSelector(), ",")).To(ContainElement(managedSelector), "%s %s", event.Verb, event.RequestURI)
		}
	})

	It("is never refused by RBAC: the installed roles cover every request it makes", func() {
		Expect(forbidden(requests)).To(BeEmpty(), "requests of %s that RBAC refused", managerUser)
	})
}

// forbidden lists the requests RBAC refused, as "verb URI".
func forbidden(requests []auditEvent) []string {
	var refused []string
	for _, event := range requests {
		if event.ResponseStatus != nil && event.ResponseStatus.Code == 403 {
			refused = append(refused, event.Verb+" "+event.RequestURI)
		}
	}
	return refused
}

// secretRead selects reads of one Secret: a get of it by name.
func secretRead(name string) auditFilter {
	return func(e auditEvent) bool {
		return e.on("secrets") && e.Verb == "get" && e.ObjectRef.Name == name
	}
}
