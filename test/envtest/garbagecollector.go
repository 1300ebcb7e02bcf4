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

package envtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// GarbageCollector is kube-controller-manager running only its garbage
// collector, which enforces owner references: without it a deleted host
// keeps its claims and Secret, and deletion tests would prove nothing.
type GarbageCollector struct {
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// StartGarbageCollector starts kube-controller-manager from
// KUBEBUILDER_ASSETS with --controllers=garbagecollector.
func (e *Environment) StartGarbageCollector() (*GarbageCollector, error) {
	dir, err := os.MkdirTemp("", "kcm-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, e.KubeConfig, 0o600); err != nil {
		return nil, err
	}
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--controllers=garbagecollector",
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=5",
		"--v=0",
	)
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	gc := &GarbageCollector{cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() {
		gc.done <- cmd.Wait()
		logFile.Close()
	}()
	return gc, nil
}

// Stop stops kube-controller-manager and removes its files.
func (g *GarbageCollector) Stop() error {
	_ = g.cmd.Process.Signal(os.Interrupt)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
	return os.RemoveAll(g.dir)
}
