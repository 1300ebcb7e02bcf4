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

package framework

import (
	"context"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capm3-preprov/capm3-preprov/test/standins/ipamstandin"
)

// IPAMStandIn runs test/standins/ipamstandin, which plays Metal3 IPAM, in this
// process, as the identity of Config. Fault specs stop it to hold claims
// without an address, as a slow or unavailable IPAM would.
type IPAMStandIn struct {
	Config *rest.Config

	standInManager
}

// StartIPAMStandIn runs the stand-in until Stop.
func StartIPAMStandIn(config *rest.Config) (*IPAMStandIn, error) {
	standIn := &IPAMStandIn{Config: config}
	return standIn, standIn.Start()
}

// Start runs the stand-in until Stop, with a manager and a cache of its
// own, as the real IPAM controller has: a manager's cache options (ours drop
// IPPool status) must not change what IPAM sees.
func (s *IPAMStandIn) Start() error {
	return s.run("IPAM", s.Config, Scheme(), &ipamv1.IPAddress{}, func(_ context.Context, mgr ctrl.Manager) error {
		return (&ipamstandin.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
}
