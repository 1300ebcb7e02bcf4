//go:build e2e

package e2e

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/test/ipamstandin"
)

// IPAMStandIn runs test/ipamstandin, which plays Metal3 IPAM, in this
// process. Fault specs stop it to hold claims without an address, as a slow
// or unavailable IPAM would.
type IPAMStandIn struct {
	Config *rest.Config
	Scheme *runtime.Scheme

	cancel context.CancelFunc
	done   chan error
}

// Start runs the stand-in until Stop.
func (s *IPAMStandIn) Start() error {
	if s.cancel != nil {
		return fmt.Errorf("the IPAM stand-in is already running")
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:  s.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Every Start is a new manager with the same controller name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	if err := (&ipamstandin.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- mgr.Start(runCtx) }()
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
