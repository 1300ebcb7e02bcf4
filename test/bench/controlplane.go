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
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// Identities on the control plane: each writer has its own, so the audit log
// tells their writes apart.
const (
	managerUser = "capm3-preprov-manager"
	floorUser   = "bench-floor"
)

// controlPlane is the framework's control plane with an audit log of what
// the manager and the floor do, and their identities.
type controlPlane struct {
	*framework.ControlPlane
	// managerKubeConfig is the manager process's identity.
	managerKubeConfig []byte
	// floorConfig is the floor's identity, with the manager's rate limits.
	floorConfig *rest.Config
	auditLog    string
	version     string
}

// startControlPlane starts a fresh control plane whose audit log is in dir,
// with the garbage collector when deletions are measured (it costs the
// other scenarios CPU and does nothing for them).
func startControlPlane(auditLog string, limits clientLimits, garbageCollector bool) (*controlPlane, error) {
	started, err := framework.StartControlPlane(framework.StartControlPlaneInput{
		AuditPolicy: auditPolicy, AuditLog: auditLog, GarbageCollector: garbageCollector,
	})
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{ControlPlane: started, auditLog: auditLog}
	if err := cp.connect(limits); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) connect(limits clientLimits) error {
	var err error
	if _, cp.managerKubeConfig, err = cp.AddUser(managerUser); err != nil {
		return err
	}
	if cp.floorConfig, _, err = cp.AddUser(floorUser); err != nil {
		return err
	}
	cp.floorConfig.QPS, cp.floorConfig.Burst = float32(limits.qps), limits.burst
	versions, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return err
	}
	info, err := versions.ServerVersion()
	if err != nil {
		return err
	}
	cp.version = info.GitVersion
	return nil
}

// pids are the control plane's processes, found as children of this one.
func (cp *controlPlane) pids() map[string]int {
	pids := map[string]int{}
	// By the name the kernel keeps of a command, its first 15 characters.
	commands := map[string]string{"kube-apiserver": "kube-apiserver", "etcd": "etcd", "kube-controller-manager": "kube-controller"}
	for name, command := range commands {
		if pid, err := framework.ChildProcess(command); err == nil {
			pids[name] = pid
		}
	}
	return pids
}
