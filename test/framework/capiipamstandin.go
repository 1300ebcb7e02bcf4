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

	"k8s.io/client-go/rest"
	ipamv1beta2 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin"
)

// CAPIIPAMStandIn runs test/standins/capiipamstandin, which plays the
// Cluster API in-cluster IPAM provider (InClusterIPPool), in this process,
// as the identity of Config. The control plane installs its pool's CRD.
type CAPIIPAMStandIn struct {
	Config *rest.Config
	// Options are read by Start.
	Options capiipamstandin.Options

	standInManager
}

// StartCAPIIPAMStandIn runs the stand-in, as the provider behaves, until Stop.
func StartCAPIIPAMStandIn(config *rest.Config) (*CAPIIPAMStandIn, error) {
	standIn := &CAPIIPAMStandIn{Config: config}
	return standIn, standIn.Start()
}

// Start runs the stand-in until Stop, with a manager and a cache of its
// own, as the real provider has.
func (s *CAPIIPAMStandIn) Start() error {
	scheme := Scheme()
	if err := capiipamstandin.AddToScheme(scheme); err != nil {
		return err
	}
	return s.run("Cluster API IPAM", s.Config, scheme, &ipamv1beta2.IPAddress{}, func(ctx context.Context, mgr ctrl.Manager) error {
		return capiipamstandin.Setup(ctx, mgr, s.Options)
	})
}
