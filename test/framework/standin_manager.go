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
	"fmt"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// standInManager runs a stand-in's controllers in this process, with a
// manager and a cache of their own, as the real controller has: our
// manager's cache options must not change what the stand-in sees.
type standInManager struct {
	cancel context.CancelFunc
	done   <-chan error
}

// run starts the stand-in named name until Stop: setup adds its controllers,
// and the informer of listed, the kind it lists, is synced before it
// reconciles rather than started by its first reconcile.
func (m *standInManager) run(name string, cfg *rest.Config, scheme *k8sruntime.Scheme, listed client.Object,
	setup func(context.Context, ctrl.Manager) error,
) error {
	if m.cancel != nil {
		return fmt.Errorf("the %s stand-in is already running", name)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
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
	if err := setup(ctx, mgr); err != nil {
		cancel()
		return err
	}
	if _, err := mgr.GetCache().GetInformer(ctx, listed); err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	m.cancel, m.done = cancel, done
	return nil
}

// Running reports whether the stand-in runs.
func (m *standInManager) Running() bool {
	return m.cancel != nil
}

// Stop stops the stand-in and waits for its reconciles to finish.
func (m *standInManager) Stop() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	err := <-m.done
	m.cancel = nil
	return err
}
