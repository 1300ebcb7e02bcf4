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
	"errors"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ipamv1beta2 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin"
)

// CAPIIPAMStandIn runs test/standins/capiipamstandin, which plays the
// Cluster API in-cluster IPAM provider (InClusterIPPool), in this process,
// as the identity of Config. The control plane installs its pool's CRD.
type CAPIIPAMStandIn struct {
	Config *rest.Config
	// Options are read by Start.
	Options capiipamstandin.Options

	cancel context.CancelFunc
	done   <-chan error
}

// StartCAPIIPAMStandIn runs the stand-in, as the provider behaves, until Stop.
func StartCAPIIPAMStandIn(config *rest.Config) (*CAPIIPAMStandIn, error) {
	standIn := &CAPIIPAMStandIn{Config: config}
	return standIn, standIn.Start()
}

// Start runs the stand-in until Stop, with a manager and a cache of its
// own, as the real provider has.
func (s *CAPIIPAMStandIn) Start() error {
	if s.cancel != nil {
		return errors.New("the Cluster API IPAM stand-in is already running")
	}
	scheme := Scheme()
	if err := capiipamstandin.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A process may start the stand-in more than once.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := capiipamstandin.Setup(ctx, mgr, s.Options); err != nil {
		cancel()
		return err
	}
	// The stand-in lists addresses: their informer must be synced before it
	// reconciles, not started by its first reconcile.
	if _, err := mgr.GetCache().GetInformer(ctx, &ipamv1beta2.IPAddress{}); err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	s.cancel, s.done = cancel, done
	return nil
}

// Running reports whether the stand-in runs.
func (s *CAPIIPAMStandIn) Running() bool {
	return s.cancel != nil
}

// Stop stops the stand-in and waits for its reconciles to finish.
func (s *CAPIIPAMStandIn) Stop() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	err := <-s.done
	s.cancel = nil
	return err
}
