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
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// secretVerbsAllowed are the only verbs the manager may have on Secrets: it
// creates and patches its own network data Secrets and watches them.
//
// RBAC cannot narrow list and watch by label: whoever may list Secrets may
// list them all. What keeps BMC credentials out of the manager is its own
// cache, restricted to Secrets labelled preprovisioning.metal3.io/managed
// (controllers/cache.go, CacheOptions); ManagerAuditSpec checks from the
// API server's audit log that it keeps to that.
var secretVerbsAllowed = []string{"get", "list", "watch", "create", "patch"}

// secretVerbsAll are the verbs of a resource like Secrets.
var secretVerbsAll = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// ManagerRBACSpec: the RBAC the manager is installed with grants no more on
// Secrets than it needs, whichever role it comes from.
func ManagerRBACSpec(ctx context.Context, inputGetter func() SpecInput) {
	var input SpecInput
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
	})

	It("grants the manager get, list, watch, create and patch on Secrets and nothing more", func() {
		c := input.Cluster
		By("Reading the manager's ClusterRole")
		clusterRole := &rbacv1.ClusterRole{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Name: managerClusterRole}, clusterRole)).To(Succeed())
		for _, rule := range clusterRole.Rules {
			Expect(rule.Verbs).NotTo(ContainElement(rbacv1.VerbAll), "rule %v", rule)
			// The one resource wildcard: get on the pools of Cluster API IPAM
			// providers, whose kinds each provider names.
			if !slices.Equal(rule.APIGroups, []string{"ipam.cluster.x-k8s.io"}) || !slices.Equal(rule.Verbs, []string{"get"}) {
				Expect(rule.Resources).NotTo(ContainElement(rbacv1.ResourceAll), "rule %v", rule)
			}
			Expect(rule.APIGroups).NotTo(ContainElement(rbacv1.APIGroupAll), "rule %v", rule)
		}
		Expect(secretVerbs(clusterRole.Rules)).To(ConsistOf(secretVerbsAllowed))

		By("Collecting the rules of every role bound to the manager's ServiceAccount")
		Expect(secretVerbs(c.rulesBoundTo(ctx, managerNamespace, managerServiceAccount))).To(ConsistOf(secretVerbsAllowed))

		By("Asking the API server what the manager may do with Secrets, in a namespace and cluster-wide")
		for _, namespace := range []string{"any-namespace", ""} {
			for _, verb := range secretVerbsAll {
				allowed := c.managerMay(ctx, verb, "secrets", namespace)
				Expect(allowed).To(Equal(slices.Contains(secretVerbsAllowed, verb)), "may %s secrets in %q: %v", verb, namespace, allowed)
			}
		}
	})
}

// secretVerbs are the verbs rules grant on core Secrets.
func secretVerbs(rules []rbacv1.PolicyRule) []string {
	var verbs []string
	for _, rule := range rules {
		coreGroup := slices.Contains(rule.APIGroups, "") || slices.Contains(rule.APIGroups, rbacv1.APIGroupAll)
		secrets := slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, rbacv1.ResourceAll)
		if !coreGroup || !secrets {
			continue
		}
		for _, verb := range rule.Verbs {
			if !slices.Contains(verbs, verb) {
				verbs = append(verbs, verb)
			}
		}
	}
	return verbs
}

// rulesBoundTo are the rules of every ClusterRole and Role bound to a
// ServiceAccount, through ClusterRoleBindings and RoleBindings of any
// namespace.
func (c *Cluster) rulesBoundTo(ctx context.Context, namespace, serviceAccount string) []rbacv1.PolicyRule {
	GinkgoHelper()
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: serviceAccount}
	var rules []rbacv1.PolicyRule
	roleRules := func(bindingNamespace string, ref rbacv1.RoleRef) []rbacv1.PolicyRule {
		if ref.Kind == "ClusterRole" {
			role := &rbacv1.ClusterRole{}
			Expect(c.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, role)).To(Succeed())
			return role.Rules
		}
		role := &rbacv1.Role{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: bindingNamespace, Name: ref.Name}, role)).To(Succeed())
		return role.Rules
	}
	clusterBindings := &rbacv1.ClusterRoleBindingList{}
	Expect(c.Client.List(ctx, clusterBindings)).To(Succeed())
	for _, binding := range clusterBindings.Items {
		if slices.Contains(binding.Subjects, subject) {
			rules = append(rules, roleRules("", binding.RoleRef)...)
		}
	}
	bindings := &rbacv1.RoleBindingList{}
	Expect(c.Client.List(ctx, bindings)).To(Succeed())
	for _, binding := range bindings.Items {
		if slices.Contains(binding.Subjects, subject) {
			rules = append(rules, roleRules(binding.Namespace, binding.RoleRef)...)
		}
	}
	Expect(rules).NotTo(BeEmpty(), "nothing is bound to ServiceAccount %s/%s", namespace, serviceAccount)
	return rules
}

// managerMay asks the API server whether the manager's ServiceAccount may
// do verb on resource in namespace ("" for cluster-wide).
func (c *Cluster) managerMay(ctx context.Context, verb, resource, namespace string) bool {
	return c.managerAccountMay(ctx, managerNamespace, verb, "", resource, namespace)
}

// managerAccountMay asks the same of the manager's ServiceAccount in
// saNamespace, for a resource of group.
func (c *Cluster) managerAccountMay(ctx context.Context, saNamespace, verb, group, resource, namespace string) bool {
	GinkgoHelper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   framework.ServiceAccountUser(saNamespace, managerServiceAccount),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: verb, Group: group, Resource: resource,
		},
	}}
	Expect(c.Client.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}
