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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/standins/bmomodel"
)

// execute carries out one operation. It returns why an operation found
// nothing to do (a host not in the state it needs), or an error when the
// soak itself could not go on.
func (s *soak) execute(ctx context.Context, o op, templates [groups]templateGroup) (string, error) {
	switch o.kind {
	case opRegister:
		for i, name := range o.hosts {
			if err := s.createHost(ctx, name, o.group, o.index+i); err != nil {
				return "", err
			}
		}
		return "", nil
	case opDelete:
		return "", s.deleteHost(ctx, o.hosts[0])
	case opRecreate:
		if err := s.deleteHost(ctx, o.hosts[0]); err != nil {
			return "", err
		}
		return "", s.createHost(ctx, o.hosts[0], o.group, o.index)
	case opRelabel:
		return "", s.patchHost(ctx, o.hosts[0], func(h *bmov1alpha1.BareMetalHost) {
			delete(h.Labels, groupLabel)
			if o.group >= 0 {
				h.Labels[groupLabel] = groupName(o.group)
			}
		})
	case opRollTemplate:
		return "", s.rollTemplate(ctx, o, templates[o.group])
	case opEditTemplate:
		return "", s.editTemplate(ctx, o, templates[o.group])
	case opResizePool:
		return "", patch(ctx, s, &ipamv1.IPPool{}, poolName(o.pool), func(pool *ipamv1.IPPool) {
			_, end := poolRange(o.pool, o.size)
			pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr(end))
		})
	case opKillManager:
		s.managerKilled = true
		return "", s.manager.Kill()
	case opStartManager:
		if !s.manager.Running() && !s.managerKilled {
			return "", fmt.Errorf("the manager exited by itself; see %s", s.manager.LogPath)
		}
		s.managerKilled = false
		return "", s.manager.Start()
	case opStopIPAM:
		return "", s.ipam.Stop()
	case opStartIPAM:
		return "", s.ipam.Start()
	}
	return s.executeOnHost(ctx, o)
}

// executeOnHost carries out what BMO, CAPM3 and tenants do to a host.
func (s *soak) executeOnHost(ctx context.Context, o op) (string, error) {
	name := o.hosts[0]
	host, err := s.getHost(ctx, name)
	if err != nil || host == nil {
		return "no such host", err
	}
	state := host.Status.Provisioning.State
	if _, paused := host.Annotations[bmov1alpha1.PausedAnnotation]; paused {
		return "host is paused", nil
	}
	switch o.kind {
	case opInspect:
		if state != bmov1alpha1.StateAvailable {
			return "host is " + string(state), nil
		}
		return "", s.patchHost(ctx, name, func(h *bmov1alpha1.BareMetalHost) { h.Annotations[bmodelInspect] = "" })
	case opProvision:
		if state != bmov1alpha1.StateAvailable || host.Spec.ConsumerRef != nil || host.Spec.Image != nil {
			return fmt.Sprintf("host is %s, consumed by %v", state, host.Spec.ConsumerRef != nil), nil
		}
		return s.provision(ctx, host, o)
	case opReleaseClaim:
		if host.Spec.ConsumerRef == nil || host.Spec.ConsumerRef.Kind != "HostClaim" {
			return "host has no HostClaim", nil
		}
		return "", s.releaseHostClaims(ctx, name)
	case opDeprovision:
		return s.deprovision(ctx, host)
	case opPower:
		return "", s.patchHost(ctx, name, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Online = o.variant == "on" })
	}
	return "", fmt.Errorf("unknown operation %s", o.kind)
}

// bmodelInspect is BMO's annotation that inspects an available host again.
const bmodelInspect = bmomodel.InspectAnnotation

func (s *soak) provision(ctx context.Context, host *bmov1alpha1.BareMetalHost, o op) (string, error) {
	switch o.variant {
	case provisionByHand:
		return "", s.patchHost(ctx, host.Name, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Image = image() })
	case provisionHostClaim:
		return s.bindHostClaim(ctx, host.Name, o.index)
	case provisionNoDataTemplat:
		return s.provisionByMachine(ctx, host, o.pool, o.index, false)
	}
	// CAPM3 waits for the controller's handoff and IPAM's address.
	if !s.manager.Running() || !s.ipam.Running() {
		return "the manager or IPAM is down: CAPM3 would wait", nil
	}
	return s.provisionByMachine(ctx, host, o.pool, o.index, true)
}

// deprovision deprovisions a provisioned host the way it was provisioned:
// CAPM3 for a Metal3Machine, the tenant gives a HostClaim up first, else
// the image goes.
func (s *soak) deprovision(ctx context.Context, host *bmov1alpha1.BareMetalHost) (string, error) {
	if host.Status.Provisioning.State != bmov1alpha1.StateProvisioned || host.Spec.Image == nil {
		return "host is " + string(host.Status.Provisioning.State), nil
	}
	consumer := host.Spec.ConsumerRef
	switch {
	case consumer != nil && consumer.Kind == "Metal3Machine":
		return "", s.deprovisionMachine(ctx, host.Name)
	case consumer != nil && consumer.Kind == "HostClaim":
		if err := s.releaseHostClaims(ctx, host.Name); err != nil {
			return "", err
		}
	}
	return "", s.patchHost(ctx, host.Name, func(h *bmov1alpha1.BareMetalHost) { h.Spec.Image = nil })
}

// rollTemplate replaces a group's template by a new one on another pool, in
// either order: a moment with two templates (a conflict) or with none (an
// orphan).
func (s *soak) rollTemplate(ctx context.Context, o op, current templateGroup) error {
	old := &preprovv1.Metal3PreprovisioningTemplate{}
	old.Namespace, old.Name = namespace, templateName(o.group, o.version-1)
	next := newTemplate(o.group, current)
	if o.variant == "delete-first" {
		if err := client.IgnoreNotFound(s.c.Delete(ctx, old)); err != nil {
			return err
		}
		return s.c.Create(ctx, next)
	}
	if err := s.c.Create(ctx, next); err != nil {
		return err
	}
	return client.IgnoreNotFound(s.c.Delete(ctx, old))
}

// editTemplate changes a group's template in place: its pool, its MTU or
// its provisioned host policy.
func (s *soak) editTemplate(ctx context.Context, o op, current templateGroup) error {
	wanted := newTemplate(o.group, current)
	return patch(ctx, s, &preprovv1.Metal3PreprovisioningTemplate{}, wanted.Name, func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec = wanted.Spec
	})
}
