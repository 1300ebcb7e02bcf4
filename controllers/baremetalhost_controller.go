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

// Package controllers holds thin reconcilers: they read the object, call a
// manager from baremetal/ or ipam/, and map events on related objects to the
// hosts they concern.
//
// Layer: above baremetal, ipam, template and the leaves; main.go wires it
// with webhooks.
package controllers

import (
	"context"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
	"github.com/capm3-preprov/capm3-preprov/internal/slim"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// +kubebuilder:rbac:groups=metal3.io,resources=baremetalhosts,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3machinetemplates;metal3datatemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3preprovisioningtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas,verbs=get
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipaddresses;ippools,verbs=get;list;watch
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipaddresses,verbs=patch;delete
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ippools,verbs=patch
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddressclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=*,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kubeadmcontrolplanes,verbs=get;list;watch

// BareMetalHostReconciler gives paused hosts their preprovisioning network
// data. Hosts are the root of the work: every other watch maps to hosts.
type BareMetalHostReconciler struct {
	Client  client.Client
	Manager *baremetal.HostManager
	// Sweeper releases what a deleted host left behind.
	Sweeper *ipam.Sweeper
}

// Reconcile runs the host manager for one host, which reports its outcome.
func (r *BareMetalHostReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := r.Client.Get(ctx, req.NamespacedName, host); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// A deleted host takes its claims and Secret with it (owner
		// references); its sweep catches what they cannot: the addresses
		// IPAM left behind, pool entries. The events of its claims, as the
		// garbage collector deletes them, bring it back here.
		r.Manager.Forget(req.NamespacedName)
		return ctrl.Result{}, r.Sweeper.SweepHost(ctx, req.NamespacedName)
	}
	if heldByClusterAPI(ctx, host) {
		return ctrl.Result{}, nil
	}
	if left, pending := r.Manager.PatchPending(host); pending {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	outcome, err := r.Manager.Reconcile(ctx, host)
	if err != nil {
		return requeueOnConflict(ctx, err)
	}
	return ctrl.Result{RequeueAfter: outcome.RequeueAfter}, nil
}

// SetupWithManager watches hosts and everything their network data depends on.
func (r *BareMetalHostReconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	hosts := &hostMapper{client: mgr.GetClient(), templates: r.Manager.Templates}
	pools := &poolMapper{client: mgr.GetClient(), claims: r.Manager.Claims}
	hostController := ctrl.NewControllerManagedBy(mgr).
		Named("baremetalhost").
		WithOptions(options).
		For(&bmov1alpha1.BareMetalHost{}, builder.WithPredicates(hostChangedWhatWeRead)).
		WithEventFilter(notPausedOrMoving).
		Watches(&capm3.Metal3MachineTemplate{}, handler.EnqueueRequestsFromMapFunc(hosts.forMachineTemplate),
			builder.WithPredicates(notInInitialList)).
		Watches(&preprovv1.Metal3PreprovisioningTemplate{}, handler.EnqueueRequestsFromMapFunc(hosts.forPreprovisioningTemplate),
			builder.WithPredicates(notInInitialList, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, pauseRemoved))).
		Watches(&capm3.Metal3DataTemplate{}, handler.EnqueueRequestsFromMapFunc(hosts.forDataTemplate),
			builder.WithPredicates(notInInitialList, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, pauseRemoved))).
		Watches(&ipamv1.IPPool{}, handler.EnqueueRequestsFromMapFunc(pools.forPool),
			builder.WithPredicates(notInInitialList, poolCreatedOrDeleted)).
		Watches(&ipamv1.IPPool{}, handler.EnqueueRequestsFromMapFunc(pools.forPoolEdit),
			builder.WithPredicates(poolAddressesChanged)).
		Watches(&ipamv1.IPPool{}, handler.EnqueueRequestsFromMapFunc(pools.forReleasedPreAllocation),
			builder.WithPredicates(preAllocationReleased)).
		Watches(&ipamv1.IPPool{}, pools.sweepHostsOfRecordedEntries()).
		Watches(&clusterv1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(hosts.forMachineTemplateUser),
			builder.WithPredicates(notInInitialList, machineTemplateReferenceChanged)).
		Watches(&ipamv1.IPClaim{}, toOwningHost).
		Watches(&ipamv1.IPClaim{}, handler.EnqueueRequestsFromMapFunc(pools.forSettledClaim), builder.WithPredicates(unservedClaimSettled)).
		Watches(&ipamv1.IPAddress{}, handler.EnqueueRequestsFromMapFunc(hosts.forAddress)).
		Watches(&ipamv1.IPAddress{}, handler.EnqueueRequestsFromMapFunc(pools.forReleasedAddress), builder.WithPredicates(addressDeleted)).
		Watches(&capipamv1.IPAddressClaim{}, toOwningHost).
		Watches(&capipamv1.IPAddress{}, handler.EnqueueRequestsFromMapFunc(hosts.forClusterAPIAddress)).
		Watches(&capipamv1.IPAddress{}, handler.EnqueueRequestsFromMapFunc(pools.forReleasedClusterAPIAddress),
			builder.WithPredicates(addressDeleted)).
		Watches(&corev1.Secret{}, toOwningHost)
	// A management cluster may run another control plane provider than
	// Kubeadm's; then no KubeadmControlPlane references a template.
	if controlplane.Served(mgr.GetRESTMapper()) {
		hostController = hostController.Watches(&controlplane.KubeadmControlPlane{}, handler.EnqueueRequestsFromMapFunc(hosts.forMachineTemplateUser),
			builder.WithPredicates(notInInitialList, machineTemplateReferenceChanged))
	}
	return hostController.Complete(r)
}

// hostChangedWhatWeRead passes the host updates that change something we
// read. BMO writes a host's status often (power state, operational status,
// errors, timestamps, inspection data we do not read): such updates cannot
// change what we do with the host.
var hostChangedWhatWeRead = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldHost, okOld := e.ObjectOld.(*bmov1alpha1.BareMetalHost)
		newHost, okNew := e.ObjectNew.(*bmov1alpha1.BareMetalHost)
		if !okOld || !okNew {
			return true
		}
		return !equality.Semantic.DeepEqual(whatWeRead(oldHost), whatWeRead(newHost))
	},
}

// whatWeRead is the part of a host we read: the slim host without what
// changes with every write (resourceVersion, generation) and what we never
// look at (finalizers, owners).
func whatWeRead(host *bmov1alpha1.BareMetalHost) *bmov1alpha1.BareMetalHost {
	read := slim.HostCopy(host)
	read.ResourceVersion, read.Generation, read.Finalizers, read.OwnerReferences = "", 0, nil, nil
	if read.Status.HardwareDetails != nil && len(read.Status.HardwareDetails.NIC) == 0 {
		// Inspection data without NICs holds nothing we read.
		read.Status.HardwareDetails = nil
	}
	return read
}

// notInInitialList drops the creations a watch reports for the objects it
// finds when it starts. The host watch's own initial list already queues
// every host, and the workers start only once every watch has synced, so
// mapping each template and pool of the initial list to its hosts would list
// every host again for nothing.
var notInInitialList = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
}

// poolCreatedOrDeleted passes the creation and deletion of a pool.
var poolCreatedOrDeleted = predicate.Funcs{
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// poolAddressesChanged passes the pool updates that change the addresses
// a pool can give, and the end of a pause (the event filter drops the
// events of a paused pool, its growth included). IPAM writes a pool's
// status on every allocation and the preAllocations backstop writes its
// spec: neither can unblock a host. Such updates are told without copying
// the pool: a status write leaves the generation as it is, and a spec is
// compared without its entries, one per host with the backstop.
var poolAddressesChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldPool, okOld := e.ObjectOld.(*ipamv1.IPPool)
		newPool, okNew := e.ObjectNew.(*ipamv1.IPPool)
		if !okOld || !okNew {
			return false
		}
		if pauseRemoved.Update(e) {
			return true
		}
		if oldPool.Generation == newPool.Generation {
			return false
		}
		oldSpec, newSpec := oldPool.Spec, newPool.Spec
		oldSpec.PreAllocations, newSpec.PreAllocations = nil, nil
		return !equality.Semantic.DeepEqual(oldSpec, newSpec)
	},
}

// conflictRetryDelay gives the cache time to catch up with the write that
// won an optimistic-lock race before the host is reconciled again.
const conflictRetryDelay = 200 * time.Millisecond

// requeueOnConflict retries a write that lost an optimistic-lock race (our
// cache was behind the API server) without reporting it as an error: it is
// expected, and the next attempt reads the newer object.
func requeueOnConflict(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("Write conflict, retrying", "reason", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	return ctrl.Result{}, err
}
