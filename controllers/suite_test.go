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
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// One control plane (with the garbage collector, so owner references are
// enforced as in a real cluster, and CAPM3's Metal3DataTemplate webhook
// played by test/standins/capm3webhook), one manager with our controllers and the
// two IPAM stand-ins (Metal3 IPAM, Cluster API's in-cluster provider) serve
// every test; each test works in its own namespace.
var (
	testEnv   *framework.ControlPlane
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{GarbageCollector: true, CAPM3Webhook: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	testEnv, k8sClient = env, env.Client

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Cache:   unshardedCacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err = Setup(ctx, mgr, Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	standIn, err := framework.StartIPAMStandIn(env.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	clusterAPIStandIn, err := framework.StartCAPIIPAMStandIn(env.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()

	code := m.Run()
	cancel()
	if err := <-managerDone; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	if err := standIn.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "IPAM stand-in:", err)
		return 1
	}
	if err := clusterAPIStandIn.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "Cluster API IPAM stand-in:", err)
		return 1
	}
	return code
}

// zapLevel keeps the controllers' logs to errors unless TEST_VERBOSE is set.
func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// unshardedCacheOptions are the cache options of a manager without
// --watch-filter that leaves the objects of every shard to the sharded
// managers tests start (startShardManager): a manager without a watch
// filter sees labelled objects too, and would act on them.
func unshardedCacheOptions() cache.Options {
	options := CacheOptions("", "")
	unsharded, err := labels.NewRequirement(clusterv1.WatchLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	options.DefaultLabelSelector = labels.NewSelector().Add(*unsharded)
	for obj, byObject := range options.ByObject {
		if byObject.Label != nil {
			requirements, _ := byObject.Label.Requirements()
			byObject.Label = labels.NewSelector().Add(append(requirements, *unsharded)...)
			options.ByObject[obj] = byObject
		}
	}
	return options
}
