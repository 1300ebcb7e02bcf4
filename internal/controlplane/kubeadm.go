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

// Package controlplane is a read-only view of Cluster API's
// KubeadmControlPlane (controlplane.cluster.x-k8s.io/v1beta2) that holds only
// what the controller reads: which infrastructure template its Machines are
// created from. The full API package pulls in kubeadm's bootstrap and
// feature-gate modules for two fields; this view decodes the same objects and
// is never written back.
//
// Layer: an internal/ leaf; it imports nothing of this module.
package controlplane

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// GroupVersion is the KubeadmControlPlane API of Cluster API v1.13.
var GroupVersion = schema.GroupVersion{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2"}

// AddToScheme registers the view under the KubeadmControlPlane kind.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &KubeadmControlPlane{}, &KubeadmControlPlaneList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

// KubeadmControlPlane holds spec.machineTemplate.spec.infrastructureRef, as
// in sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2.
type KubeadmControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KubeadmControlPlaneSpec `json:"spec,omitempty"`
}

// KubeadmControlPlaneSpec holds spec.machineTemplate.
type KubeadmControlPlaneSpec struct {
	MachineTemplate MachineTemplate `json:"machineTemplate,omitempty"`
}

// MachineTemplate holds spec.machineTemplate.spec.
type MachineTemplate struct {
	Spec MachineTemplateSpec `json:"spec,omitempty"`
}

// MachineTemplateSpec holds spec.machineTemplate.spec.infrastructureRef.
type MachineTemplateSpec struct {
	InfrastructureRef clusterv1.ContractVersionedObjectReference `json:"infrastructureRef,omitempty"`
}

// KubeadmControlPlaneList is a list of KubeadmControlPlanes.
type KubeadmControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeadmControlPlane `json:"items"`
}

// DeepCopy copies the view; every field but the metadata is a value.
func (in *KubeadmControlPlane) DeepCopy() *KubeadmControlPlane {
	if in == nil {
		return nil
	}
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject copies the view.
func (in *KubeadmControlPlane) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return in.DeepCopy()
}

// DeepCopyObject copies the list.
func (in *KubeadmControlPlaneList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]KubeadmControlPlane, len(in.Items))
		for i := range in.Items {
			out.Items[i] = *in.Items[i].DeepCopy()
		}
	}
	return &out
}

// Served reports whether the API server serves KubeadmControlPlane.
func Served(mapper meta.RESTMapper) bool {
	_, err := mapper.RESTMapping(schema.GroupKind{Group: GroupVersion.Group, Kind: "KubeadmControlPlane"}, GroupVersion.Version)
	return err == nil
}
