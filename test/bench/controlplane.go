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
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capm3-preprov/capm3-preprov/test/envtest"
)

// Identities on the control plane: each writer has its own, so the audit log
// tells their writes apart.
const (
	managerUser = "capm3-preprov-manager"
	floorUser   = "bench-floor"
)

// controlPlane is kube-apiserver and etcd with every CRD, as test/envtest
// starts them, plus an audit log of what the manager and the floor do.
type controlPlane struct {
	env *ctrlenvtest.Environment
	// admin creates the fleet and runs the IPAM stand-in, unthrottled.
	admin       client.Client
	adminConfig *rest.Config
	// managerKubeConfig is the manager process's identity.
	managerKubeConfig []byte
	// floorConfig is the floor's identity, with the manager's rate limits.
	floorConfig *rest.Config
	auditLog    string
	version     string
}

// startControlPlane starts a fresh control plane whose audit files live in dir.
func startControlPlane(dir string, limits clientLimits) (*controlPlane, error) {
	root := envtest.RepoRoot()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(root, "bin", "k8s")) //nolint:errcheck // envtest reads it
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	cp := &controlPlane{auditLog: filepath.Join(dir, "audit.log")}
	cp.env = &ctrlenvtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "upstream"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                envtest.Scheme(),
	}
	cp.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", cp.auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	var err error
	if cp.adminConfig, err = cp.env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	if err := cp.connect(limits); err != nil {
		_ = cp.env.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) connect(limits clientLimits) error {
	var err error
	if cp.admin, err = client.New(cp.adminConfig, client.Options{Scheme: cp.env.Scheme}); err != nil {
		return err
	}
	manager, err := cp.env.AddUser(ctrlenvtest.User{Name: managerUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	if cp.managerKubeConfig, err = manager.KubeConfig(); err != nil {
		return err
	}
	floor, err := cp.env.AddUser(ctrlenvtest.User{Name: floorUser, Groups: []string{"system:masters"}},
		&rest.Config{QPS: float32(limits.qps), Burst: limits.burst})
	if err != nil {
		return err
	}
	cp.floorConfig = floor.Config()
	versions, err := discovery.NewDiscoveryClientForConfig(cp.adminConfig)
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
	return childProcesses("kube-apiserver", "etcd")
}

func (cp *controlPlane) stop() error {
	return cp.env.Stop()
}
