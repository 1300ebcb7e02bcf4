package main

import (
	"context"
	"fmt"
	"os"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/test/envtest"
	"github.com/capm3-preprov/capm3-preprov/test/ipamstandin"
)

func init() {
	// The harness logs nothing through controller-runtime but errors.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
}

// startStandIn runs the IPAM stand-in in this process, as the admin, until
// the returned stop function is called.
func startStandIn(ctx context.Context, admin *rest.Config) (stop func(), err error) {
	mgr, err := ctrl.NewManager(admin, ctrl.Options{
		Scheme:                 envtest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every run starts a new stand-in in this process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	if err := (&ipamstandin.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// The stand-in lists addresses: their informer must be synced before it
	// reconciles, not started on its first reconcile.
	if _, err := mgr.GetCache().GetInformer(ctx, &ipamv1.IPAddress{}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "IPAM stand-in:", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
