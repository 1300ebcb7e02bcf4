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

package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// EventSource is the name our events are reported by.
const EventSource = "capm3-preprov"

// Options configure the controllers.
type Options struct {
	// AllMachineTemplates opts every Metal3MachineTemplate in as a source.
	AllMachineTemplates bool
	// Host configures the host controller (concurrency).
	Host controller.Options
	// PoolPreallocations records each host's addresses in its pools'
	// spec.preAllocations, a backstop for the claims.
	PoolPreallocations bool
	// InspectionStallTimeout is how long BMO may take a host we unpaused
	// through registering and inspecting before the host gets a Warning
	// event (baremetal.DefaultInspectionStallTimeout when zero).
	InspectionStallTimeout time.Duration
	// RamdiskEndpoints are what the deploy ramdisk must reach without DHCP
	// (--ramdisk-endpoints), for templates that name none.
	RamdiskEndpoints []networkdata.Endpoint
}

// Setup registers the field indexes, every controller and the hosts
// metric with the manager. The manager binary and the tests wire the
// controllers the same way.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	hosts, err := setupControllers(ctx, mgr, opts)
	if err != nil {
		return err
	}
	return metrics.Register(hosts)
}

// setupControllers registers the field indexes, every controller and the
// host tally, and returns the tally for the hosts metric; the metric is
// registered once per process (tests run a second, sharded manager).
func setupControllers(ctx context.Context, mgr ctrl.Manager, opts Options) (*hostTally, error) {
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	templates := &baremetal.Templates{Reader: mgr.GetClient(), AllMachineTemplates: opts.AllMachineTemplates}
	sweeper := &ipam.Sweeper{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	// It removes the pool entries of deleted hosts, a pool write at a time.
	if err := mgr.Add(sweeper); err != nil {
		return nil, err
	}
	hostManager := &baremetal.HostManager{
		Client:    mgr.GetClient(),
		Templates: templates,
		Claims:    &ipam.Claims{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Indexed: true},
		Recorder:  mgr.GetEventRecorder(EventSource),
		APIReader: mgr.GetAPIReader(),

		InspectionStallTimeout: opts.InspectionStallTimeout,
		RamdiskEndpoints:       opts.RamdiskEndpoints,
	}
	if opts.PoolPreallocations {
		hostManager.Preallocations = &ipam.Preallocations{Client: mgr.GetClient()}
		// It records the hosts' addresses, a pool write at a time.
		if err := mgr.Add(hostManager.Preallocations); err != nil {
			return nil, err
		}
	}
	// What hosts deleted while no manager ran left behind is swept once we
	// lead. A failed sweep (the API server away) is retried and never stops
	// the manager.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName("startup-sweep")
		if err := wait.ExponentialBackoffWithContext(ctx, startupSweepBackoff, func(ctx context.Context) (bool, error) {
			if err := sweeper.Sweep(ctx, ""); err != nil {
				log.Error(err, "Sweeping what deleted hosts left behind; retrying")
				return false, nil
			}
			return true, nil
		}); err != nil {
			log.Error(err, "Gave up the start-up sweep; host deletions still sweep their namespace")
		}
		return nil
	})); err != nil {
		return nil, err
	}
	hosts := newHostTally(mgr.GetCache(), mgr.GetClient(), templates, controlplane.Served(mgr.GetRESTMapper()), mgr.Elected())
	if err := mgr.Add(hosts); err != nil {
		return nil, err
	}
	if err := (&BareMetalHostReconciler{
		Client: mgr.GetClient(), Manager: hostManager, Sweeper: sweeper,
	}).SetupWithManager(mgr, opts.Host); err != nil {
		return nil, err
	}
	if err := (&TemplateStatusReconciler{
		Client: mgr.GetClient(), Templates: templates, Hosts: hosts,
		Recorder: mgr.GetEventRecorder(EventSource),
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return hosts, (&HandoffReconciler{
		Client:   mgr.GetClient(),
		Handoff:  &ipam.Handoff{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()},
		Recorder: mgr.GetEventRecorder(EventSource),
	}).SetupWithManager(mgr)
}

// startupSweepBackoff retries the start-up sweep for about half an hour.
var startupSweepBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: 12, Cap: 5 * time.Minute}
