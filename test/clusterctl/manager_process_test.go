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

package clusterctl_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// The test binary runs our controllers as a process of their own, a
// framework.ManagerProcess, when managerProcessEnv is set: a manager per
// control plane, with controllers.Setup as the binary wires it, its own
// identity and its own metrics registry (Setup registers our metrics once a
// process), stopped with SIGTERM as a Pod is. It takes the flags of
// bin/manager that ManagerProcess passes.
const managerProcessEnv = "PREPROV_TEST_MANAGER"

// runManagerProcess is the manager process's main.
func runManagerProcess() int {
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	flags := flag.NewFlagSet("manager", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "")
	metrics := flags.String("diagnostics-address", "0", "")
	// Metrics are plain HTTP here, always.
	flags.Bool("insecure-diagnostics", true, "")
	probe := flags.String("health-addr", "0", "")
	if err := flags.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if err := runManager(*kubeconfig, *metrics, *probe); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return 0
}

func runManager(kubeconfig, metrics, probe string) error {
	ctx := ctrl.SetupSignalHandler()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  controllers.CacheOptions("", ""),
		Metrics:                metricsserver.Options{BindAddress: metrics},
		HealthProbeBindAddress: probe,
	})
	if err != nil {
		return err
	}
	if err := controllers.Setup(ctx, mgr, controllers.Options{}); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// startManagerProcess starts the controllers against the control plane the
// kubeconfig reaches and waits until the manager serves /readyz. It is
// stopped when the test ends, if the test did not stop it.
func startManagerProcess(t *testing.T, kubeconfig []byte, name string) *framework.ManagerProcess {
	t.Helper()
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))
	m := &framework.ManagerProcess{
		Name:    name,
		Binary:  os.Args[0],
		LogPath: filepath.Join(dir, name+".log"),
		Args:    []string{"--kubeconfig=" + kubeconfigPath},
		Env:     []string{managerProcessEnv + "=1"},
	}
	t.Cleanup(func() {
		_ = m.Kill()
		if t.Failed() {
			printLog(t, m)
		}
	})
	require.NoError(t, m.Start())
	return m
}

// idle reports whether every controller of ours has an empty queue and no
// reconcile under way, and how many hosts are in each phase.
func idle(ctx context.Context, m *framework.ManagerProcess) (bool, map[string]float64, error) {
	metrics, err := m.Metrics(ctx)
	if err != nil {
		return false, nil, err
	}
	if len(metrics["workqueue_depth"]) == 0 || len(metrics["controller_runtime_active_workers"]) == 0 {
		return false, nil, errors.New("no workqueue metrics yet")
	}
	idle := metrics.Sum("workqueue_depth") == 0 && metrics.Sum("controller_runtime_active_workers") == 0
	return idle, metrics.SumBy("capm3_preprov_hosts", "phase"), nil
}

func printLog(t *testing.T, m *framework.ManagerProcess) {
	t.Helper()
	log, err := os.ReadFile(m.LogPath)
	if err != nil {
		return
	}
	if len(log) > 20000 {
		log = log[len(log)-20000:]
	}
	t.Logf("%s's log (%s), last 20000 bytes:\n%s", m.Name, m.LogPath, log)
}
