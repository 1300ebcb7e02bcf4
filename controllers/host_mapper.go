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

package controllers

import (
	"context"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// hostMapper maps events on related objects to the hosts they concern. On
// an update the handler maps both the old and the new object, so hosts that a
// template stops selecting are visited as well as those it starts selecting.
type hostMapper struct {
	client    client.Client
	templates *baremetal.Templates
}

func (m *hostMapper) forMachineTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	m3mt, ok := obj.(*capm3.Metal3MachineTemplate)
	if !ok {
		return nil
	}
	source := template.FromMachineTemplate(m3mt)
	if !m.templates.MachineTemplateEnabled(m3mt) {
		// Not a source: only the hosts it set up earlier can be affected.
		return m.hostsSetUpBy(ctx, m3mt.Namespace, source.Ref)
	}
	return m.hostsOf(ctx, m3mt.Namespace, source)
}

func (m *hostMapper) forPreprovisioningTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	m3ppt, ok := obj.(*preprovv1.Metal3PreprovisioningTemplate)
	if !ok {
		return nil
	}
	return m.hostsOf(ctx, m3ppt.Namespace, template.FromPreprovisioningTemplate(m3ppt))
}

// forDataTemplate maps a Metal3DataTemplate to the hosts of every template
// that names it.
func (m *hostMapper) forDataTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	byDataTemplate := []client.ListOption{
		client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{index.DataTemplateField: obj.GetName()},
	}
	var requests []reconcile.Request
	machineTemplates := &capm3.Metal3MachineTemplateList{}
	if err := m.client.List(ctx, machineTemplates, byDataTemplate...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Metal3MachineTemplates of a Metal3DataTemplate")
		return nil
	}
	for i := range machineTemplates.Items {
		requests = append(requests, m.forMachineTemplate(ctx, &machineTemplates.Items[i])...)
	}
	preprovTemplates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := m.client.List(ctx, preprovTemplates, byDataTemplate...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Metal3PreprovisioningTemplates of a Metal3DataTemplate")
		return nil
	}
	for i := range preprovTemplates.Items {
		requests = append(requests, m.forPreprovisioningTemplate(ctx, &preprovTemplates.Items[i])...)
	}
	return requests
}

// forAddress maps an IPAddress to the hosts owning its claim: IPAM creates
// the address before it points the claim at it, but our cache may see the two
// in either order. An address of ours whose claim is gone maps to the host
// named in the claim's name, so that a deleted host's sweep releases what
// IPAM left behind (ipam.Sweeper).
func (m *hostMapper) forAddress(ctx context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok || address.Spec.Claim.Name == "" {
		return nil
	}
	claim := &ipamv1.IPClaim{}
	if err := m.client.Get(ctx, client.ObjectKey{Namespace: address.Namespace, Name: address.Spec.Claim.Name}, claim); err != nil {
		host, ours := strings.CutSuffix(address.Spec.Claim.Name, "-"+address.Spec.Pool.Name)
		if !apierrors.IsNotFound(err) || !ours || !ownership.Ours(address) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: address.Namespace, Name: host}}}
	}
	return hostsOwning(claim)
}

// hostsOwning maps an object to the hosts that own it, which live in its
// namespace.
func hostsOwning(obj client.Object) []reconcile.Request {
	var requests []reconcile.Request
	for _, host := range ownership.HostOwners(obj) {
		requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: host}})
	}
	return requests
}

// toOwningHost enqueues the hosts that own an object (on an update, those
// of the old and of the new object). handler.EnqueueRequestForOwner does the
// same but looks up the owner kind's REST mapping on every event: 14 % of
// what the manager allocated over 1000 hosts (docs/performance.md).
var toOwningHost = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
	return hostsOwning(obj)
})

// forClusterAPIAddress maps a Cluster API IPAddress to the hosts owning the
// IPAddressClaim it was allocated to: the provider writes the address before
// the claim's status.addressRef, and the cache may show them in either order.
func (m *hostMapper) forClusterAPIAddress(ctx context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*capipamv1.IPAddress)
	if !ok || address.Spec.ClaimRef.Name == "" {
		return nil
	}
	claim := &capipamv1.IPAddressClaim{}
	if err := m.client.Get(ctx, client.ObjectKey{Namespace: address.Namespace, Name: address.Spec.ClaimRef.Name}, claim); err != nil {
		// The claim's own events bring its host.
		return nil
	}
	return hostsOwning(claim)
}

// forMachineTemplateUser maps a MachineDeployment or KubeadmControlPlane to
// the hosts of the Metal3MachineTemplate it references: a rollout decides
// which of several templates governs a host (baremetal.Templates.Resolve).
// On an update both the old and the new object are mapped, so the hosts of
// the template it stopped referencing are visited too.
func (m *hostMapper) forMachineTemplateUser(ctx context.Context, obj client.Object) []reconcile.Request {
	name := referencedMachineTemplate(obj)
	if name == "" {
		return nil
	}
	m3mt := &capm3.Metal3MachineTemplate{}
	if err := m.client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, m3mt); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Getting the Metal3MachineTemplate a MachineDeployment or KubeadmControlPlane references")
		}
		return nil
	}
	return m.forMachineTemplate(ctx, m3mt)
}

// referencedMachineTemplate is the name of the Metal3MachineTemplate a
// MachineDeployment or KubeadmControlPlane references, or "".
func referencedMachineTemplate(obj client.Object) string {
	var ref clusterv1.ContractVersionedObjectReference
	switch user := obj.(type) {
	case *clusterv1.MachineDeployment:
		ref = user.Spec.Template.Spec.InfrastructureRef
	case *controlplane.KubeadmControlPlane:
		ref = user.Spec.MachineTemplate.Spec.InfrastructureRef
	}
	if ref.Kind != preprovv1.KindMachineTemplate || ref.APIGroup != capm3.GroupVersion.Group {
		return ""
	}
	return ref.Name
}

// hostsOf returns the hosts a template selects and the hosts it set up.
func (m *hostMapper) hostsOf(ctx context.Context, namespace string, source template.Template) []reconcile.Request {
	requests := m.hostsSetUpBy(ctx, namespace, source.Ref)
	selector, err := template.HostSelector(source.Selector)
	if err != nil {
		return requests
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := m.client.List(ctx, hosts, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHosts a template selects", "template", source.Ref.String())
		return requests
	}
	for i := range hosts.Items {
		requests = append(requests, requestFor(&hosts.Items[i]))
	}
	return requests
}

func (m *hostMapper) hostsSetUpBy(ctx context.Context, namespace string, ref template.Ref) []reconcile.Request {
	hosts := &bmov1alpha1.BareMetalHostList{}
	err := m.client.List(ctx, hosts, client.InNamespace(namespace), client.MatchingFields{index.HostTemplateField: ref.String()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHosts a template set up", "template", ref.String())
		return nil
	}
	requests := make([]reconcile.Request, 0, len(hosts.Items))
	for i := range hosts.Items {
		requests = append(requests, requestFor(&hosts.Items[i]))
	}
	return requests
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// machineTemplateReferenceChanged passes the creations and deletions of
// MachineDeployments and KubeadmControlPlanes, and the updates that change
// the Metal3MachineTemplate they reference: a scale or a status update
// changes nothing a host depends on.
var machineTemplateReferenceChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return referencedMachineTemplate(e.ObjectOld) != referencedMachineTemplate(e.ObjectNew)
	},
}

// pauseRemoved passes the updates that end Cluster API's hold on an object
// (ownership.PausedOrMoving): the event filter dropped what changed on it
// meanwhile, an edit of a template or the growth of a pool, so the end of
// the hold stands for all of it.
var pauseRemoved = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return ownership.PausedOrMoving(e.ObjectOld) && !ownership.PausedOrMoving(e.ObjectNew)
	},
}
