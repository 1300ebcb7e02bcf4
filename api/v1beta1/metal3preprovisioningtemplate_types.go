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

package v1beta1

import (
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ProvisionedHostPolicy says what happens to the network data of a host that
// is already provisioned when its template changes.
// +kubebuilder:validation:Enum=ReportDrift;Update
type ProvisionedHostPolicy string

const (
	// ProvisionedHostReportDrift leaves a provisioned host's Secret as it is
	// and reports the drift. The default: a running host is never changed
	// under its workload.
	ProvisionedHostReportDrift ProvisionedHostPolicy = "ReportDrift"
	// ProvisionedHostUpdate re-renders the Secret of provisioned hosts too.
	ProvisionedHostUpdate ProvisionedHostPolicy = "Update"
)

// Metal3PreprovisioningTemplateSpec selects BareMetalHosts and gives the
// network data their deploy ramdisk boots with.
type Metal3PreprovisioningTemplateSpec struct {
	// hostSelector selects the BareMetalHosts of this namespace that this
	// template serves, with the semantics of CAPM3's Metal3Machine hostSelector.
	// +required
	HostSelector capm3.HostSelector `json:"hostSelector"`

	// networkData is the network configuration of the deploy ramdisk, in the
	// schema of Metal3DataTemplate spec.networkData. Exactly one of
	// networkData and dataTemplateRef is set.
	// +optional
	NetworkData *capm3.NetworkData `json:"networkData,omitempty"`

	// dataTemplateRef names a Metal3DataTemplate in this namespace whose
	// networkData is used. Exactly one of networkData and dataTemplateRef is set.
	// +optional
	DataTemplateRef *corev1.LocalObjectReference `json:"dataTemplateRef,omitempty"`

	// bondParameters sets scalar bond parameters, by the id of a bond of the
	// network data and by parameter name. Each is rendered on that bond as
	// bond_<name>: <value>, the keys the deploy ramdisk's glean and the OS's
	// cloud-init read (bond_miimon: 100, bond_lacp_rate: fast). A bond's own
	// parameters (CAPM3's schema) only take objects, which those tools
	// ignore, and a bond needs at least one: list a parameter there by name
	// without a value, and its value here fills it. Names are Linux bonding
	// options in lower case (miimon, lacp_rate, updelay, ad_select, ...); a
	// bond's mode, members and transmit hash policy come from its bondMode,
	// bondLinks and bondXmitHashPolicy. Values are non-negative integers or
	// words such as fast or layer3+4.
	// +optional
	// +kubebuilder:validation:MaxProperties=512
	BondParameters map[string]map[string]intstr.IntOrString `json:"bondParameters,omitempty"`

	// ramdiskEndpoints are what the deploy ramdisk of this template's hosts
	// must reach without DHCP: Ironic's API as the ramdisk calls it back
	// (ironic-image's IRONIC_EXTERNAL_CALLBACK_URL) and its image server
	// (IRONIC_EXTERNAL_HTTP_URL), as URLs with an IP address or as bare IP
	// addresses; host names are refused. A host whose network data has no
	// address of an endpoint's family, or no route to it, is kept paused with
	// a PreprovisioningEndpointUnreachable Warning. When set, replaces the
	// manager's --ramdisk-endpoints for this template's hosts.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=2048
	RamdiskEndpoints []string `json:"ramdiskEndpoints,omitempty"`

	// adoptExistingHosts lets this template manage hosts that are not paused
	// with metal3.io/preprovisioning. Off by default, so installing the
	// controller never changes an existing fleet.
	// +optional
	AdoptExistingHosts bool `json:"adoptExistingHosts,omitempty"`

	// provisionedHostPolicy says what happens to provisioned hosts when this
	// template changes: ReportDrift (default) or Update.
	// +kubebuilder:default=ReportDrift
	// +optional
	ProvisionedHostPolicy ProvisionedHostPolicy `json:"provisionedHostPolicy,omitempty"`
}

// Metal3PreprovisioningTemplateStatus tells how the selected hosts are doing.
// The counts are pointers so that a zero is written, and shown by kubectl.
type Metal3PreprovisioningTemplateStatus struct {
	// observedGeneration is the generation these counts were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// matchedHosts counts the hosts this template selects.
	// +optional
	MatchedHosts *int32 `json:"matchedHosts,omitempty"`
	// readyHosts counts hosts whose network data is rendered and set.
	// +optional
	ReadyHosts *int32 `json:"readyHosts,omitempty"`
	// waitingHosts counts hosts waiting for IP addresses.
	// +optional
	WaitingHosts *int32 `json:"waitingHosts,omitempty"`
	// failedHosts counts hosts with an error that needs a user's fix.
	// +optional
	FailedHosts *int32 `json:"failedHosts,omitempty"`
	// conflictingHosts counts hosts that another template selects too.
	// +optional
	ConflictingHosts *int32 `json:"conflictingHosts,omitempty"`
	// orphanedHosts counts hosts we set up that this template no longer selects.
	// +optional
	OrphanedHosts *int32 `json:"orphanedHosts,omitempty"`
	// stalledHosts counts hosts that have their network data but that BMO
	// has not got past registering or inspecting in the manager's
	// --inspection-stall-timeout since we removed our pause. They count as
	// ready hosts too.
	// +optional
	StalledHosts *int32 `json:"stalledHosts,omitempty"`

	// conditions of this template, Cluster API v1beta2 style.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=metal3preprovisioningtemplates,scope=Namespaced,categories=cluster-api;metal3,shortName=m3ppt
// +kubebuilder:subresource:status
// clusterctl move moves every template: nothing owns one, so no Cluster's hierarchy takes it along.
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
// +kubebuilder:printcolumn:name="Matched",type="integer",JSONPath=".status.matchedHosts"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyHosts"
// +kubebuilder:printcolumn:name="Waiting",type="integer",JSONPath=".status.waitingHosts"
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failedHosts"
// +kubebuilder:printcolumn:name="Conflicting",type="integer",JSONPath=".status.conflictingHosts"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// Metal3PreprovisioningTemplate gives the deploy ramdisk of the BareMetalHosts
// it selects a static network configuration, with addresses from Metal3 IPAM,
// before they are inspected.
type Metal3PreprovisioningTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Metal3PreprovisioningTemplateSpec   `json:"spec,omitempty"`
	Status Metal3PreprovisioningTemplateStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions, for CAPI's conditions helpers.
func (t *Metal3PreprovisioningTemplate) GetConditions() []metav1.Condition {
	return t.Status.Conditions
}

// SetConditions sets the conditions, for CAPI's conditions helpers.
func (t *Metal3PreprovisioningTemplate) SetConditions(conditions []metav1.Condition) {
	t.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// Metal3PreprovisioningTemplateList is a list of Metal3PreprovisioningTemplates.
type Metal3PreprovisioningTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Metal3PreprovisioningTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Metal3PreprovisioningTemplate{}, &Metal3PreprovisioningTemplateList{})
}
