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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/test/standins/ipamstandin"
)

// IPAMStandIn runs test/standins/ipamstandin, which plays Metal3 IPAM, in this
// process, as the identity of Config. Fault specs stop it to hold claims
// without an address, as a slow or unavailable IPAM would.
type IPAMStandIn struct {
	Config *rest.Config

	cancel context.CancelFunc
	done   <-chan error
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
	if s.cancel != nil {
		return errors.New("the IPAM stand-in is already running")
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A process may start the stand-in more than once.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	if err := (&ipamstandin.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The stand-in lists addresses: their informer must be synced before it
	// reconciles, not started by its first reconcile.
	if _, err := mgr.GetCache().GetInformer(ctx, &ipamv1.IPAddress{}); err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	s.cancel, s.done = cancel, done
	return nil
}

// Running reports whether the stand-in runs.
func (s *IPAMStandIn) Running() bool {
	return s.cancel != nil
}

// Stop stops the stand-in and waits for its reconciles to finish.
func (s *IPAMStandIn) Stop() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	err := <-s.done
	s.cancel = nil
	return err
}
