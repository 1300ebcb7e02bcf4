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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// managerProcess is bin/manager running as its own process, as in a
// cluster, with its own identity and client limits, and the peaks of its
// runtime metrics.
type managerProcess struct {
	*framework.ManagerProcess
	// profilerAddress serves Go's pprof endpoints (--profiler-address).
	profilerAddress string

	mu   sync.Mutex
	peak runtimePeak
}

// runtimePeak is the largest heap, and the most goroutines, the metrics
// endpoint reported, and the largest anonymous and file-backed parts of the
// resident set the kernel reported. The file-backed part is pages of the
// binary: how many of them the kernel maps depends on where the linker put
// the code that runs, so two builds of nearly the same code can differ by
// megabytes there; the anonymous part is what the manager allocates.
type runtimePeak struct {
	heapAlloc, heapInuse, goroutines float64
	anonRSS, fileRSS                 float64
}

// deploymentEnv is the environment the Deployment in the file gives the
// manager container, as NAME=value pairs, so the benchmark measures the
// manager as it ships.
func deploymentEnv(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	deployment := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, deployment); err != nil {
		return nil, fmt.Errorf("reading the Deployment in %s: %w", path, err)
	}
	for _, container := range deployment.Spec.Template.Spec.Containers {
		if container.Name != "manager" {
			continue
		}
		env := make([]string, 0, len(container.Env))
		for _, variable := range container.Env {
			if variable.ValueFrom != nil {
				return nil, fmt.Errorf("%s: the manager's %s comes from the cluster (valueFrom); the benchmark cannot set it", path, variable.Name)
			}
			env = append(env, variable.Name+"="+variable.Value)
		}
		return env, nil
	}
	return nil, fmt.Errorf("%s: no container named manager", path)
}

// noBMO is the manager's --inspection-stall-timeout: no BMO runs here, so no
// host ever gets past registering, and a run longer than the default 15
// minutes (5000 hosts on this machine) would have the manager report every
// host as stalled, a patch and an event each, which a fleet with BMO never sees.
const noBMO = 24 * time.Hour

// startManager starts the manager binary as name (its log is name.log in
// dir) with the client limits and the extra flags.
func startManager(name, binary, dir string, kubeConfig []byte, limits clientLimits, env []string, extraArgs ...string) (*managerProcess, error) {
	kubeConfigPath := filepath.Join(dir, name+".kubeconfig")
	if err := os.WriteFile(kubeConfigPath, kubeConfig, 0o600); err != nil {
		return nil, err
	}
	profilerPort, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	profilerAddress := fmt.Sprintf("127.0.0.1:%d", profilerPort)
	m := &managerProcess{profilerAddress: profilerAddress, ManagerProcess: &framework.ManagerProcess{
		Name:    name,
		Binary:  binary,
		LogPath: filepath.Join(dir, name+".log"),
		Args: append([]string{
			"--kubeconfig", kubeConfigPath,
			"--webhook-port=0",
			"--kube-api-qps=" + strconv.FormatFloat(limits.qps, 'f', -1, 64),
			"--kube-api-burst=" + strconv.Itoa(limits.burst),
			"--host-concurrency=" + strconv.Itoa(limits.concurrency),
			"--inspection-stall-timeout=" + noBMO.String(),
			"--profiler-address=" + profilerAddress,
		}, extraArgs...),
		Env: env,
	}}
	if err := m.Start(); err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	return m, nil
}

// sampleRuntime records the peaks every interval until ctx ends.
func (m *managerProcess) sampleRuntime(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if sample, err := m.Metrics(ctx); err == nil {
			m.mu.Lock()
			m.peak.heapAlloc = max(m.peak.heapAlloc, sample.Sum("go_memstats_heap_alloc_bytes"))
			m.peak.heapInuse = max(m.peak.heapInuse, sample.Sum("go_memstats_heap_inuse_bytes"))
			m.peak.goroutines = max(m.peak.goroutines, sample.Sum("go_goroutines"))
			m.mu.Unlock()
		}
		if status, err := procStatus(m.PID()); err == nil {
			m.mu.Lock()
			m.peak.anonRSS = max(m.peak.anonRSS, status["RssAnon"])
			m.peak.fileRSS = max(m.peak.fileRSS, status["RssFile"])
			m.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (m *managerProcess) runtimePeak() runtimePeak {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// memory is the manager's peak and current resident set, from the kernel.
func (m *managerProcess) memory() (peak, current float64, err error) {
	status, err := procStatus(m.PID())
	if err != nil {
		return 0, 0, err
	}
	return status["VmHWM"], status["VmRSS"], nil
}

// saveHeapProfile writes the manager's heap profile, after a collection,
// to path.
func (m *managerProcess) saveHeapProfile(ctx context.Context, path string) error {
	profile, err := framework.Fetch(ctx, "http://"+m.profilerAddress+"/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("%s's heap profile: %w", m.Name, err)
	}
	return os.WriteFile(path, profile, 0o644)
}

// running reports an early exit of the manager as an error.
func (m *managerProcess) running() error {
	if !m.Running() {
		return fmt.Errorf("the manager exited early; its log: %s", m.LogPath)
	}
	return nil
}
