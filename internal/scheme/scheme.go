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

// Package scheme builds the runtime scheme with every kind we read or write.
//
// Layer: an internal/ leaf; it imports api/v1beta1 and internal/controlplane.
package scheme

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
)

// New returns a scheme with Kubernetes' built-in kinds, BMO's, CAPM3's
// (v1beta2, the stored version), Metal3 IPAM's, ours, CAPI's core and IPAM
// kinds and a view of KubeadmControlPlane.
func New() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(bmov1alpha1.AddToScheme(scheme))
	utilruntime.Must(capm3.AddToScheme(scheme))
	utilruntime.Must(ipamv1.AddToScheme(scheme))
	utilruntime.Must(capipamv1.AddToScheme(scheme))
	utilruntime.Must(preprovv1.AddToScheme(scheme))
	// Read for the infrastructure templates they reference, never written.
	utilruntime.Must(clusterv1.AddToScheme(scheme))
	utilruntime.Must(controlplane.AddToScheme(scheme))
	return scheme
}
