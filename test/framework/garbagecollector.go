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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// garbageCollector is kube-controller-manager running only its garbage
// collector, which enforces owner references: without it a deleted host
// keeps its claims and Secret, and deletion tests would prove nothing.
type garbageCollector struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startGarbageCollector starts kube-controller-manager from
// KUBEBUILDER_ASSETS with --controllers=garbagecollector, its files in a
// folder of the control plane's.
func startGarbageCollector(controlPlaneDir string, adminKubeConfig []byte) (*garbageCollector, error) {
	dir := filepath.Join(controlPlaneDir, "kube-controller-manager")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, adminKubeConfig, 0o600); err != nil {
		return nil, err
	}
	binary := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	cmd := exec.Command(binary, //nolint:noctx // it runs until stop, not for the length of a context
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
		_ = logFile.Close() // nothing was written to it
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	gc := &garbageCollector{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close() // an os.File buffers nothing, so no line is lost
		close(gc.exited)
	}()
	return gc, nil
}

// stop stops kube-controller-manager.
func (g *garbageCollector) stop() {
	stopProcess(g.cmd.Process, os.Interrupt, g.exited, 10*time.Second)
}
