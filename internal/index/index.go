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

// Package index holds the field indexes the controllers use to map an event
// on one object to the hosts it concerns, instead of scanning every host.
//
// Layer: an internal/ leaf; it imports api/v1beta1 and internal/ownership.
package index

import (
	"context"
	"fmt"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

const (
	// HostTemplateField indexes BareMetalHosts by the template recorded on
	// them ("<Kind>/<name>"), to find the hosts a template set up.
	HostTemplateField = "preprovisioning.metal3.io/template"
	// DataTemplateField indexes Metal3MachineTemplates and
	// Metal3PreprovisioningTemplates by the Metal3DataTemplate they name.
	DataTemplateField = "preprovisioning.metal3.io/data-template"
	// HostPausedForUsField indexes BareMetalHosts paused with our value
	// ("true"): the hosts a pool change can unblock.
	HostPausedForUsField = "preprovisioning.metal3.io/paused"
	// HostConsumerField indexes BareMetalHosts by the Metal3Machine that
	// consumes them (spec.consumerRef).
	HostConsumerField = "spec.consumerRef.metal3machine"
	// Metal3DataClaimField indexes Metal3Data by spec.claim.name: CAPM3 names
	// a Metal3DataClaim like its Metal3Machine, so this finds the data of a
	// host's consumer.
	Metal3DataClaimField = "spec.claim.name"
	// ClaimHostField indexes IPClaims and Cluster API IPAddressClaims by the
	// name of the BareMetalHost that owns them, so a host's claims are found
	// without reading all of its namespace's claims.
	ClaimHostField = "metadata.ownerReferences.baremetalhost"
	// UnownedAddressClaimField indexes IPAddresses by the name of the
	// IPClaim they were allocated to (spec.claim.name), but only those no
	// owner reference ties to that claim. IPAM makes the claim an owner of
	// its address (IPPoolManager.createAddress), and the garbage collector
	// drops the reference once the claim is gone: so the addresses IPAM left
	// behind deleted claims are found without reading the namespace's, and
	// the addresses in use cost the index nothing (an entry per address
	// was the most of the memory the manager's indexes took).
	UnownedAddressClaimField = "spec.claim.name.unowned"
	// HostNameStemField indexes BareMetalHosts named "<stem>-<digits>" by
	// <stem>: the Metal3DataTemplate whose Metal3Data CAPM3 would name like
	// the host. The template webhook finds such hosts without reading all
	// the hosts a template selects.
	HostNameStemField = "metadata.name.stem"
)

// RegisterHostNameStem adds HostNameStemField to the manager's cache; the
// webhooks register it, as the manager may run them alone.
func RegisterHostNameStem(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, HostNameStemField, hostNameStem); err != nil {
		return fmt.Errorf("indexing BareMetalHosts by name stem: %w", err)
	}
	return nil
}

// Register adds our field indexes to the manager's cache.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, HostTemplateField, hostTemplate); err != nil {
		return fmt.Errorf("indexing BareMetalHosts by template: %w", err)
	}
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, HostPausedForUsField, hostPausedForUs); err != nil {
		return fmt.Errorf("indexing BareMetalHosts by our pause: %w", err)
	}
	if err := indexer.IndexField(ctx, &bmov1alpha1.BareMetalHost{}, HostConsumerField, hostConsumer); err != nil {
		return fmt.Errorf("indexing BareMetalHosts by consumer: %w", err)
	}
	if err := indexer.IndexField(ctx, &capm3.Metal3Data{}, Metal3DataClaimField, metal3DataClaim); err != nil {
		return fmt.Errorf("indexing Metal3Data by claim: %w", err)
	}
	if err := indexer.IndexField(ctx, &ipamv1.IPAddress{}, UnownedAddressClaimField, unownedAddressClaim); err != nil {
		return fmt.Errorf("indexing IPAddresses by the claim that no longer owns them: %w", err)
	}
	if err := indexer.IndexField(ctx, &ipamv1.IPClaim{}, ClaimHostField, claimHost); err != nil {
		return fmt.Errorf("indexing IPClaims by host: %w", err)
	}
	if err := indexer.IndexField(ctx, &capipamv1.IPAddressClaim{}, ClaimHostField, claimHost); err != nil {
		return fmt.Errorf("indexing IPAddressClaims by host: %w", err)
	}
	if err := indexer.IndexField(ctx, &capm3.Metal3MachineTemplate{}, DataTemplateField, machineTemplateDataTemplate); err != nil {
		return fmt.Errorf("indexing Metal3MachineTemplates by data template: %w", err)
	}
	if err := indexer.IndexField(ctx, &preprovv1.Metal3PreprovisioningTemplate{}, DataTemplateField, preprovTemplateDataTemplate); err != nil {
		return fmt.Errorf("indexing Metal3PreprovisioningTemplates by data template: %w", err)
	}
	return nil
}

func hostTemplate(obj client.Object) []string {
	if ref := obj.GetAnnotations()[preprovv1.TemplateAnnotation]; ref != "" {
		return []string{ref}
	}
	return nil
}

func hostPausedForUs(obj client.Object) []string {
	if ownership.PausedForUs(obj) {
		return []string{"true"}
	}
	return nil
}

func machineTemplateDataTemplate(obj client.Object) []string {
	m3mt, ok := obj.(*capm3.Metal3MachineTemplate)
	if !ok || m3mt.Spec.Template.Spec.DataTemplate == nil || m3mt.Spec.Template.Spec.DataTemplate.Name == "" {
		return nil
	}
	return []string{m3mt.Spec.Template.Spec.DataTemplate.Name}
}

func preprovTemplateDataTemplate(obj client.Object) []string {
	m3ppt, ok := obj.(*preprovv1.Metal3PreprovisioningTemplate)
	if !ok || m3ppt.Spec.DataTemplateRef == nil || m3ppt.Spec.DataTemplateRef.Name == "" {
		return nil
	}
	return []string{m3ppt.Spec.DataTemplateRef.Name}
}

func hostConsumer(obj client.Object) []string {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok || !ownership.ConsumedByMetal3Machine(host) {
		return nil
	}
	return []string{host.Spec.ConsumerRef.Name}
}

func metal3DataClaim(obj client.Object) []string {
	data, ok := obj.(*capm3.Metal3Data)
	if !ok || data.Spec.Claim == nil || data.Spec.Claim.Name == "" {
		return nil
	}
	return []string{data.Spec.Claim.Name}
}

func claimHost(obj client.Object) []string {
	return ownership.HostOwners(obj)
}

func unownedAddressClaim(obj client.Object) []string {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok || address.Spec.Claim.Name == "" || ownership.OwnedByIPClaim(address, address.Spec.Claim.Name) {
		return nil
	}
	return []string{address.Spec.Claim.Name}
}

func hostNameStem(obj client.Object) []string {
	name := obj.GetName()
	dash := strings.LastIndexByte(name, '-')
	if dash <= 0 || dash == len(name)-1 || strings.Trim(name[dash+1:], "0123456789") != "" {
		return nil
	}
	return []string{name[:dash]}
}
