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
	"errors"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3datas,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3dataclaims,verbs=get
// +kubebuilder:rbac:groups=ipam.metal3.io,resources=ipclaims,verbs=patch

// HandoffReconciler hands the claims of the hosts we set up over to CAPM3
// when CAPM3 provisions them, so they keep their addresses (see ipam.Handoff).
// It acts on CAPM3's objects as they appear; it never waits for an error.
type HandoffReconciler struct {
	Client  client.Client
	Handoff *ipam.Handoff
	// Recorder reports what stops a handoff that a user must unblock.
	Recorder events.EventRecorder
}

// Reconcile hands one host's claims over.
func (r *HandoffReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := r.Client.Get(ctx, req.NamespacedName, host); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if heldByClusterAPI(ctx, host) {
		return ctrl.Result{}, nil
	}
	result, err := r.Handoff.Reconcile(ctx, host)
	if err != nil {
		return requeueOnConflict(ctx, err)
	}
	if result.OutsideShard != "" {
		ctrl.LoggerFrom(ctx).Error(errors.New(result.OutsideShard), "The host's Metal3Data is outside its shard", "reason", ReasonShardMismatch)
		r.Recorder.Eventf(host, nil, corev1.EventTypeWarning, ReasonShardMismatch, baremetal.EventAction, "%s",
			baremetal.EventNote(result.OutsideShard, nil))
	}
	return ctrl.Result{RequeueAfter: result.RetryAfter}, nil
}

// ReasonShardMismatch is the Warning of a host whose Metal3Data lacks the
// host's cluster.x-k8s.io/watch-filter label: the manager of the host's
// shard does not see it.
const ReasonShardMismatch = "PreprovisioningShardMismatch"

// SetupWithManager watches the hosts we set up, their claims, and CAPM3's
// Metal3Data.
func (r *HandoffReconciler) SetupWithManager(mgr ctrl.Manager) error {
	setUpByUs := predicate.NewPredicateFuncs(func(obj client.Object) bool { return ownership.Ours(obj) })
	return ctrl.NewControllerManagedBy(mgr).
		Named("capm3-handoff").
		For(&bmov1alpha1.BareMetalHost{}, builder.WithPredicates(setUpByUs)).
		WithEventFilter(notPausedOrMoving).
		Watches(&ipamv1.IPClaim{}, toOwningHost).
		Watches(&capm3.Metal3Data{}, handler.EnqueueRequestsFromMapFunc(r.hostOfData)).
		Complete(r)
}

// hostOfData maps a Metal3Data to the host its Metal3Machine consumes.
func (r *HandoffReconciler) hostOfData(ctx context.Context, obj client.Object) []reconcile.Request {
	data, ok := obj.(*capm3.Metal3Data)
	if !ok || data.Spec.Claim == nil {
		return nil
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := r.Client.List(ctx, hosts, client.InNamespace(data.Namespace),
		client.MatchingFields{index.HostConsumerField: data.Spec.Claim.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHost of a Metal3Data")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(hosts.Items))
	for i := range hosts.Items {
		requests = append(requests, requestFor(&hosts.Items[i]))
	}
	return requests
}
