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

package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InClusterIPPoolKind is the kind an IPAddressClaim's spec.poolRef names.
const InClusterIPPoolKind = "InClusterIPPool"

// GlobalInClusterIPPoolKind is the kind of the provider's cluster-scoped pool.
const GlobalInClusterIPPoolKind = "GlobalInClusterIPPool"

// InClusterIPPoolSpec is the provider's pool spec.
type InClusterIPPoolSpec struct {
	// Addresses are the addresses to give: single addresses, CIDRs or
	// ranges "first-last", not necessarily contiguous.
	Addresses []string `json:"addresses"`

	// Prefix is the network prefix of the addresses given.
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:validation:Minimum=0
	Prefix int `json:"prefix"`

	// Gateway is the network's gateway; it is never given as an address.
	// +optional
	Gateway string `json:"gateway,omitempty"`

	// AllocateReservedIPAddresses gives the network address and, for IPv4,
	// the broadcast address of the prefix too.
	// +optional
	AllocateReservedIPAddresses bool `json:"allocateReservedIPAddresses,omitempty"`

	// ExcludedAddresses are never given (single addresses, CIDRs or ranges).
	// +optional
	ExcludedAddresses []string `json:"excludedAddresses,omitempty"`
}

// InClusterIPPoolStatus is the provider's pool status.
type InClusterIPPoolStatus struct {
	// Addresses counts the pool's addresses.
	// +optional
	Addresses *InClusterIPPoolStatusIPAddresses `json:"ipAddresses,omitempty"`
}

// InClusterIPPoolStatusIPAddresses counts a pool's addresses.
type InClusterIPPoolStatusIPAddresses struct {
	// Total is the number of addresses the pool can give.
	Total int `json:"total"`

	// Free is the number of those not given.
	Free int `json:"free"`

	// Used is the number of IPAddresses of the pool.
	Used int `json:"used"`

	// OutOfRange is the number of IPAddresses of the pool whose address the
	// pool can no longer give.
	OutOfRange int `json:"outOfRange"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=cluster-api
// +kubebuilder:printcolumn:name="Addresses",type="string",JSONPath=".spec.addresses",description="List of addresses, to allocate from"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.ipAddresses.total",description="Count of IPs configured for the pool"
// +kubebuilder:printcolumn:name="Free",type="integer",JSONPath=".status.ipAddresses.free",description="Count of unallocated IPs in the pool"
// +kubebuilder:printcolumn:name="Used",type="integer",JSONPath=".status.ipAddresses.used",description="Count of allocated IPs in the pool"

// InClusterIPPool is a namespaced pool of the in-cluster provider:
// IPAddressClaims of its namespace name it in spec.poolRef.
type InClusterIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InClusterIPPoolSpec   `json:"spec,omitempty"`
	Status InClusterIPPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// InClusterIPPoolList is a list of InClusterIPPool.
type InClusterIPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InClusterIPPool `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Cluster,categories=cluster-api
// +kubebuilder:printcolumn:name="Addresses",type="string",JSONPath=".spec.addresses",description="List of addresses, to allocate from"
// +kubebuilder:printcolumn:name="Free",type="integer",JSONPath=".status.ipAddresses.free",description="Count of unallocated IPs in the pool"

// GlobalInClusterIPPool is the provider's cluster-scoped pool, with the
// spec and status of an InClusterIPPool: IPAddressClaims of any namespace
// name it in spec.poolRef. The stand-in does not serve it; it is here so a
// test control plane has the kind, scope and status a real one has.
type GlobalInClusterIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InClusterIPPoolSpec   `json:"spec,omitempty"`
	Status InClusterIPPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GlobalInClusterIPPoolList is a list of GlobalInClusterIPPool.
type GlobalInClusterIPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GlobalInClusterIPPool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&InClusterIPPool{}, &InClusterIPPoolList{}, &GlobalInClusterIPPool{}, &GlobalInClusterIPPoolList{})
}
