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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// The soak plays CAPM3 where a host is provisioned by a Metal3Machine, as
// CAPM3's metal3data_manager.go does for a Metal3 IPPool: the Metal3Data
// takes the address of "<metal3data>-<pool>", else of "<host>-<pool>" once
// that claim carries the Metal3Data's UID among its owners, else makes
// "<metal3data>-<pool>" itself; the OS gets a Secret of its own through
// spec.networkData.

// provisionByMachine provisions a host as CAPM3 does for a Metal3Machine;
// withData renders a Metal3Data from the pool's data template, without it
// the Metal3Machine has no dataTemplate and the OS gets the preprovisioning
// Secret. It says why it did not provision.
func (s *soak) provisionByMachine(ctx context.Context, host *bmov1alpha1.BareMetalHost, pool, seq int, withData bool) (string, error) {
	machine := fmt.Sprintf("m-%s-%d", host.Name, seq)
	if !withData {
		if err := s.c.Create(ctx, consumerObject(&capm3.Metal3Machine{}, host.Name, machine)); err != nil {
			return "", err
		}
		return "", s.patchHost(ctx, host.Name, func(h *bmov1alpha1.BareMetalHost) {
			h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine", Namespace: namespace, Name: machine}
			h.Spec.Image = image()
		})
	}
	dataName := fmt.Sprintf("%s-%d", dataTemplateName(pool), seq)
	data, err := framework.ProvisionAsCAPM3(ctx, s.c, namespace, host.Name, machine, dataName, dataTemplateName(pool))
	if err != nil {
		return "", err
	}
	for _, obj := range []client.Object{&capm3.Metal3Machine{}, &capm3.Metal3DataClaim{}} {
		if err = s.labelConsumer(ctx, obj, machine, host.Name); err != nil {
			return "", err
		}
	}
	if err = s.labelConsumer(ctx, &capm3.Metal3Data{}, dataName, host.Name); err != nil {
		return "", err
	}
	address, why, err := s.renderAddress(ctx, host.Name, data, poolName(pool))
	if err != nil || why != "" {
		return why, errors.Join(err, s.deleteConsumers(ctx, host.Name), s.patchHost(ctx, host.Name, func(h *bmov1alpha1.BareMetalHost) {
			h.Spec.ConsumerRef = nil
		}))
	}
	secret := consumerObject(&corev1.Secret{}, host.Name, dataName+"-networkdata")
	document, err := json.Marshal(map[string]any{"links": []any{}, "services": []any{},
		"networks": []any{map[string]any{"id": poolName(pool), "ip_address": address}}})
	if err != nil {
		return "", err
	}
	secret.Data = map[string][]byte{"networkData": document}
	if err := s.c.Create(ctx, secret); err != nil {
		return "", err
	}
	return "", s.patchHost(ctx, host.Name, func(h *bmov1alpha1.BareMetalHost) {
		h.Spec.NetworkData = &corev1.SecretReference{Name: secret.Name, Namespace: namespace}
		h.Spec.Image = image()
	})
}

// renderAddress is the address CAPM3 renders for the Metal3Data on pool.
func (s *soak) renderAddress(ctx context.Context, hostName string, data *capm3.Metal3Data, pool string) (string, string, error) {
	claim := &ipamv1.IPClaim{}
	name := ipam.ClaimName(hostName, pool)
	err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim)
	if client.IgnoreNotFound(err) != nil {
		return "", "", err
	}
	if err != nil {
		name = ipam.ClaimName(data.Name, pool)
		claim = consumerObject(&ipamv1.IPClaim{}, hostName, name)
		claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Data", Name: data.Name, UID: data.UID}}
		claim.Spec.Pool = corev1.ObjectReference{Name: pool, Namespace: namespace}
		if err = s.c.Create(ctx, claim); err != nil {
			return "", "", err
		}
	}
	// CAPM3 waits for the owner reference on the host's claim, and for
	// IPAM's address on either.
	var address string
	err = wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		if err = s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		owned := slices.ContainsFunc(claim.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == data.UID })
		if !owned || claim.Status.Address == nil {
			return claim.Status.ErrorMessage != nil, nil
		}
		ip := &ipamv1.IPAddress{}
		if err = s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim.Status.Address.Name}, ip); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		address = string(ip.Spec.Address)
		return true, nil
	})
	switch {
	case err != nil:
		// CAPM3 would wait on: the provisioning is given up, not the soak.
		return "", fmt.Sprintf("IPClaim %s got no address for Metal3Data %s in %s", name, data.Name, objectTimeout), nil //nolint:nilerr // a claim without address is why the host was not provisioned
	case address == "":
		return "", fmt.Sprintf("IPClaim %s failed: %s", name, *claim.Status.ErrorMessage), nil
	}
	return address, "", nil
}

// deprovisionMachine deprovisions a host CAPM3 provisioned: the image and
// network data go, BMO deprovisions, then CAPM3 lets the host go and
// deletes its Metal3Data, claims and Machine.
func (s *soak) deprovisionMachine(ctx context.Context, name string) error {
	if err := s.patchHost(ctx, name, func(h *bmov1alpha1.BareMetalHost) {
		h.Spec.Image, h.Spec.NetworkData = nil, nil
	}); err != nil {
		return err
	}
	if err := s.waitState(ctx, name, bmov1alpha1.StateAvailable); err != nil {
		return err
	}
	if err := s.patchHost(ctx, name, func(h *bmov1alpha1.BareMetalHost) { h.Spec.ConsumerRef = nil }); err != nil {
		return err
	}
	return s.deleteConsumers(ctx, name)
}

// consumerKinds are the kinds the soak makes for a host as CAPM3 and as a
// tenant, labelled with the host they are for.
var consumerKinds = []client.ObjectList{
	&bmov1alpha1.HostClaimList{}, &capm3.Metal3DataList{}, &capm3.Metal3DataClaimList{}, &capm3.Metal3MachineList{},
	&ipamv1.IPClaimList{}, &corev1.SecretList{},
}

// deleteConsumers deletes what consumes a host (HostClaims, the objects
// of CAPM3) and waits for the HostClaims to let it go.
func (s *soak) deleteConsumers(ctx context.Context, hostName string) error {
	for _, list := range consumerKinds {
		if err := s.c.DeleteAllOf(ctx, newItem(list), client.InNamespace(namespace), client.MatchingLabels{consumerLabel: hostName}); err != nil {
			return fmt.Errorf("deleting the %T of host %s: %w", list, hostName, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		claims := &bmov1alpha1.HostClaimList{}
		err := s.c.List(ctx, claims, client.InNamespace(namespace), client.MatchingLabels{consumerLabel: hostName})
		return err == nil && len(claims.Items) == 0, err
	})
}

func newItem(list client.ObjectList) client.Object {
	switch list.(type) {
	case *bmov1alpha1.HostClaimList:
		return &bmov1alpha1.HostClaim{}
	case *capm3.Metal3DataList:
		return &capm3.Metal3Data{}
	case *capm3.Metal3DataClaimList:
		return &capm3.Metal3DataClaim{}
	case *capm3.Metal3MachineList:
		return &capm3.Metal3Machine{}
	case *ipamv1.IPClaimList:
		return &ipamv1.IPClaim{}
	}
	return &corev1.Secret{}
}

// consumerObject names obj and labels it as made for a host.
func consumerObject[T client.Object](obj T, hostName, name string) T {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.SetLabels(map[string]string{consumerLabel: hostName})
	return obj
}

func (s *soak) labelConsumer(ctx context.Context, obj client.Object, name, hostName string) error {
	return patch(ctx, s, obj, name, func(o client.Object) {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[consumerLabel] = hostName
		o.SetLabels(labels)
	})
}

// bindHostClaim makes a tenant's HostClaim for a host; BMO's model binds it.
// It says why the host was not bound.
func (s *soak) bindHostClaim(ctx context.Context, hostName string, seq int) (string, error) {
	claim := consumerObject(&bmov1alpha1.HostClaim{}, hostName, fmt.Sprintf("tenant-%s-%d", hostName, seq))
	claim.Spec = bmov1alpha1.HostClaimSpec{PoweredOn: true, Image: image(),
		HostSelector: bmov1alpha1.HostSelector{MatchLabels: map[string]string{hostLabel: hostName}}}
	if err := s.c.Create(ctx, claim); err != nil {
		return "", err
	}
	err := wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		err := s.c.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		return err == nil && claim.Status.BareMetalHost != nil, err
	})
	if err != nil {
		return fmt.Sprintf("HostClaim %s not bound: %v", claim.Name, err), s.deleteConsumers(ctx, hostName)
	}
	return "", nil
}

// releaseHostClaims deletes the tenant's HostClaims of a host: BMO clears
// the host's consumerRef and leaves it provisioned.
func (s *soak) releaseHostClaims(ctx context.Context, hostName string) error {
	if err := s.c.DeleteAllOf(ctx, &bmov1alpha1.HostClaim{}, client.InNamespace(namespace), client.MatchingLabels{consumerLabel: hostName}); err != nil {
		return err
	}
	return s.deleteConsumers(ctx, hostName)
}
