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

// Package v1alpha2 is a test copy of the schema of the Cluster API in-cluster
// IPAM provider's pools (kubernetes-sigs/
// cluster-api-ipam-provider-in-cluster, api/v1alpha2), for
// test/standins/capiipamstandin. That provider is not served as a Go module
// here, so its types cannot be imported: the group, version, kind, field
// names and JSON are the provider's, so objects written for the real
// provider (examples, docs) are accepted as they are. GlobalInClusterIPPool
// has its kind, scope and schema but the stand-in does not serve it. Left
// out: the prefix pools and spec.addressReuseGracePeriodSeconds
// (the stand-in gives a released address again at once, as the provider does
// when that field is unset).
//
// +kubebuilder:object:generate=true
// +groupName=ipam.cluster.x-k8s.io
package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the in-cluster provider's API group and version.
	GroupVersion = schema.GroupVersion{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2"}

	// SchemeBuilder adds InClusterIPPool to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds InClusterIPPool to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
