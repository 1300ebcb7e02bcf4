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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
)

// The test binary runs our controllers as a process of their own when
// managerKubeConfigEnv names a kubeconfig: a manager per control plane, with
// controllers.Setup as the binary wires it, its own identity and its own
// metrics registry (Setup registers our metrics once a process), stopped
// with SIGTERM as a Pod is.
const (
	managerKubeConfigEnv = "PREPROV_TEST_MANAGER_KUBECONFIG"
	managerMetricsEnv    = "PREPROV_TEST_MANAGER_METRICS"
	managerProbeEnv      = "PREPROV_TEST_MANAGER_PROBE"
)

// runManagerProcess is the manager process's main.
func runManagerProcess(kubeconfig string) int {
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	if err := runManager(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return 0
}

func runManager(kubeconfig string) error {
	ctx := ctrl.SetupSignalHandler()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  controllers.CacheOptions(""),
		Metrics:                metricsserver.Options{BindAddress: os.Getenv(managerMetricsEnv)},
		HealthProbeBindAddress: os.Getenv(managerProbeEnv),
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

// managerProcess is our controllers running in a child process.
type managerProcess struct {
	cmd     *exec.Cmd
	metrics string
	logPath string
	exited  chan error
}

// startManagerProcess starts the controllers against the control plane the
// kubeconfig reaches and waits until the manager serves /readyz.
func startManagerProcess(t *testing.T, kubeconfig []byte, name string) *managerProcess {
	t.Helper()
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigPath, kubeconfig, 0o600))
	metrics, probe := freeAddress(t), freeAddress(t)
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		managerKubeConfigEnv+"="+kubeconfigPath, managerMetricsEnv+"="+metrics, managerProbeEnv+"="+probe)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Never outlive the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	m := &managerProcess{cmd: cmd, metrics: metrics, logPath: logPath, exited: make(chan error, 1)}
	go func() {
		m.exited <- cmd.Wait()
		logFile.Close()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			m.printLog(t, name)
		}
	})
	require.Eventually(t, func() bool {
		response, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false
		}
		response.Body.Close()
		return response.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "%s never served /readyz", name)
	return m
}

// stop sends SIGTERM, as the kubelet does to a Pod scaled away, and waits
// for the manager to finish.
func (m *managerProcess) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-m.exited:
		require.NoError(t, err, "the manager did not exit cleanly")
	case <-time.After(30 * time.Second):
		t.Fatal("the manager did not stop within 30 s of SIGTERM")
	}
}

// scrape reads the manager's metrics: each series ("name{labels}") and its
// value, in Prometheus' text format.
func (m *managerProcess) scrape(ctx context.Context) (map[string]float64, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	series := map[string]float64{}
	scanner := bufio.NewScanner(response.Body)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		space := strings.LastIndexByte(line, ' ')
		if space < 0 {
			return nil, fmt.Errorf("unreadable metrics line %q", line)
		}
		value, err := strconv.ParseFloat(line[space+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("unreadable metrics line %q: %w", line, err)
		}
		series[line[:space]] = value
	}
	return series, scanner.Err()
}

// idle reports whether every controller of ours has an empty queue and no
// reconcile under way, and how many hosts are in each phase.
func (m *managerProcess) idle(ctx context.Context) (bool, map[string]float64, error) {
	series, err := m.scrape(ctx)
	if err != nil {
		return false, nil, err
	}
	phases := map[string]float64{}
	seen := 0
	idle := true
	for name, value := range series {
		switch {
		case strings.HasPrefix(name, "capm3_preprov_hosts{"):
			phases[labelValue(name, "phase")] += value
		case strings.HasPrefix(name, "workqueue_depth{"), strings.HasPrefix(name, "controller_runtime_active_workers{"):
			seen++
			idle = idle && value == 0
		}
	}
	if seen == 0 {
		return false, nil, errors.New("no workqueue metrics yet")
	}
	return idle, phases, nil
}

func labelValue(series, label string) string {
	start := strings.Index(series, label+`="`)
	if start < 0 {
		return ""
	}
	rest := series[start+len(label)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

func (m *managerProcess) printLog(t *testing.T, name string) {
	file, err := os.Open(m.logPath)
	if err != nil {
		return
	}
	defer file.Close()
	log, _ := io.ReadAll(file)
	if len(log) > 20000 {
		log = log[len(log)-20000:]
	}
	t.Logf("%s's log (%s), last 20000 bytes:\n%s", name, m.logPath, log)
}

func freeAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	return listener.Addr().String()
}
