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

package bmomodel

import (
	"context"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// hostClaims binds HostClaims to hosts and lets them go, as BMO's HostClaim
// controller does as far as the host is concerned.
type hostClaims struct {
	Client client.Client
}

// Reconcile binds a new HostClaim to an available, unpaused, unconsumed host
// its hostSelector matches (matchLabels), or releases a deleted one.
func (r *hostClaims) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	claim := &bmov1alpha1.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, claim)
	}
	if claim.Status.BareMetalHost != nil {
		return ctrl.Result{}, nil
	}
	host, err := r.pick(ctx, claim)
	if err != nil || host == nil {
		return ctrl.Result{RequeueAfter: stepDelay}, err
	}
	if !controllerutil.ContainsFinalizer(claim, bmov1alpha1.HostClaimFinalizer) {
		original := claim.DeepCopy()
		controllerutil.AddFinalizer(claim, bmov1alpha1.HostClaimFinalizer)
		return ctrl.Result{}, r.Client.Patch(ctx, claim, client.MergeFrom(original))
	}
	original := host.DeepCopy()
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
	}
	host.Spec.Image = claim.Spec.Image.DeepCopy()
	host.Spec.Online = claim.Spec.PoweredOn
	host.Spec.NetworkData = nil
	if claim.Spec.NetworkData != nil {
		host.Spec.NetworkData = &corev1.SecretReference{Name: claim.Spec.NetworkData.Name, Namespace: claim.Namespace}
	}
	if err := r.Client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, err
	}
	claimOriginal := claim.DeepCopy()
	claim.Status.BareMetalHost = &bmov1alpha1.ObjectReference{Namespace: host.Namespace, Name: host.Name}
	return ctrl.Result{}, r.Client.Status().Patch(ctx, claim, client.MergeFrom(claimOriginal))
}

// pick returns the first host the claim may take, nil when none.
func (r *hostClaims) pick(ctx context.Context, claim *bmov1alpha1.HostClaim) (*bmov1alpha1.BareMetalHost, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := r.Client.List(ctx, hosts, client.InNamespace(claim.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(claim.Spec.HostSelector.MatchLabels)}); err != nil {
		return nil, err
	}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		_, paused := host.Annotations[bmov1alpha1.PausedAnnotation]
		if !paused && host.Spec.ConsumerRef == nil && host.DeletionTimestamp.IsZero() &&
			host.Status.Provisioning.State == bmov1alpha1.StateAvailable {
			return host, nil
		}
	}
	return nil, nil
}

// release clears the consumerRef of the claim's host and leaves the host as
// it is, provisioned or not (BMO's HostClaim Delete), then lets the claim go.
func (r *hostClaims) release(ctx context.Context, claim *bmov1alpha1.HostClaim) error {
	if !controllerutil.ContainsFinalizer(claim, bmov1alpha1.HostClaimFinalizer) {
		return nil
	}
	if bound := claim.Status.BareMetalHost; bound != nil {
		host := &bmov1alpha1.BareMetalHost{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: bound.Namespace, Name: bound.Name}, host)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && host.Spec.ConsumerRef != nil && host.Spec.ConsumerRef.Kind == "HostClaim" && host.Spec.ConsumerRef.Name == claim.Name {
			original := host.DeepCopy()
			host.Spec.ConsumerRef = nil
			if err := r.Client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
				return err
			}
		}
	}
	original := claim.DeepCopy()
	controllerutil.RemoveFinalizer(claim, bmov1alpha1.HostClaimFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, claim, client.MergeFrom(original)))
}
