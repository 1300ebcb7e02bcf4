// Package v1beta1 contains the capm3-preprov API: Metal3PreprovisioningTemplate.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of our kinds. It is CAPM3's
	// group, so our template sits next to Metal3DataTemplate in kubectl.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1"}

	// SchemeBuilder adds our kinds to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds our kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
