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
	"fmt"
	"slices"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/standins/bmomodel"
)

// snapshot is the soak namespace's objects at one moment, with the
// machines BMO's model runs.
type snapshot struct {
	hosts      []bmov1alpha1.BareMetalHost
	claims     []ipamv1.IPClaim
	addresses  []ipamv1.IPAddress
	pools      []ipamv1.IPPool
	secrets    []corev1.Secret
	templates  []preprovv1.Metal3PreprovisioningTemplate
	hostClaims []bmov1alpha1.HostClaim
	data       []capm3.Metal3Data
	uses       []bmomodel.Use
}

func (s *soak) snapshot(ctx context.Context) (*snapshot, error) {
	hosts, claims, addresses := &bmov1alpha1.BareMetalHostList{}, &ipamv1.IPClaimList{}, &ipamv1.IPAddressList{}
	pools, secrets := &ipamv1.IPPoolList{}, &corev1.SecretList{}
	templates, hostClaims, data := &preprovv1.Metal3PreprovisioningTemplateList{}, &bmov1alpha1.HostClaimList{}, &capm3.Metal3DataList{}
	for _, list := range []client.ObjectList{hosts, claims, addresses, pools, secrets, templates, hostClaims, data} {
		if err := s.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
	}
	return &snapshot{
		hosts: hosts.Items, claims: claims.Items, addresses: addresses.Items, pools: pools.Items, secrets: secrets.Items,
		templates: templates.Items, hostClaims: hostClaims.Items, data: data.Items, uses: s.model.Uses(),
	}, nil
}

// fingerprint changes whenever an object or a machine changes.
func (snap *snapshot) fingerprint() string {
	var parts []string
	add := func(kind string, obj client.Object) {
		parts = append(parts, kind+"/"+obj.GetName()+"@"+obj.GetResourceVersion())
	}
	for i := range snap.hosts {
		add("host", &snap.hosts[i])
	}
	for i := range snap.claims {
		add("claim", &snap.claims[i])
	}
	for i := range snap.addresses {
		add("address", &snap.addresses[i])
	}
	for i := range snap.pools {
		add("pool", &snap.pools[i])
	}
	for i := range snap.secrets {
		add("secret", &snap.secrets[i])
	}
	for _, use := range snap.uses {
		parts = append(parts, fmt.Sprintf("machine/%s/%s=%v", use.Host.Name, use.System, use.Addresses))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// pending names work that is sure to come: BMO moving a host, IPAM serving
// or releasing a claim, a deletion under way.
func (snap *snapshot) pending() string {
	for i := range snap.hosts {
		host := &snap.hosts[i]
		if reason := hostPending(host); reason != "" {
			return "host " + host.Name + " " + reason
		}
	}
	for _, claim := range snap.claims {
		switch {
		case !claim.DeletionTimestamp.IsZero():
			return "IPClaim " + claim.Name + " is being deleted"
		case claim.Status.Address == nil && claim.Status.ErrorMessage == nil:
			return "IPClaim " + claim.Name + " waits for IPAM"
		}
	}
	for _, claim := range snap.hostClaims {
		if !claim.DeletionTimestamp.IsZero() {
			return "HostClaim " + claim.Name + " is being deleted"
		}
	}
	return ""
}

func hostPending(host *bmov1alpha1.BareMetalHost) string {
	if !host.DeletionTimestamp.IsZero() {
		return "is being deleted"
	}
	if _, paused := host.Annotations[bmov1alpha1.PausedAnnotation]; paused {
		return ""
	}
	state := host.Status.Provisioning.State
	switch {
	case state == bmov1alpha1.StateAvailable && (host.Spec.Image != nil || hasAnnotation(host, bmomodel.InspectAnnotation)):
		return "is about to leave available"
	case state == bmov1alpha1.StateProvisioned && host.Spec.Image == nil:
		return "is about to be deprovisioned"
	case state != bmov1alpha1.StateAvailable && state != bmov1alpha1.StateProvisioned:
		return "is " + string(state)
	case host.Spec.Online != host.Status.PoweredOn:
		return "is being powered"
	}
	return ""
}

func hasAnnotation(obj client.Object, key string) bool {
	_, found := obj.GetAnnotations()[key]
	return found
}

// settle waits until nothing is pending and nothing has changed for quiet,
// the manager and IPAM running.
func (s *soak) settle(ctx context.Context, quiet, timeout time.Duration) (*snapshot, error) {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(2 * poll)
	defer ticker.Stop()
	var last string
	since := time.Now()
	for {
		snap, err := s.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		fingerprint, pending := snap.fingerprint(), snap.pending()
		if fingerprint != last || pending != "" {
			last, since = fingerprint, time.Now()
		} else if time.Since(since) >= quiet {
			return snap, nil
		}
		if time.Now().After(deadline) {
			if pending == "" {
				pending = "objects kept changing"
			}
			return snap, fmt.Errorf("did not settle within %s: %s", timeout, pending)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ticker.C:
		}
	}
}
