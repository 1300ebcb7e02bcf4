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

// Package envtest starts the test control plane: the real kube-apiserver and
// etcd built under bin/k8s, with our CRDs and the upstream ones (BMO, CAPM3,
// Metal3 IPAM, CAPI) generated from the pinned API modules.
package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
)

// Environment is a running test control plane.
type Environment struct {
	env *envtest.Environment
	// Webhook tells a webhook server where to serve, when the environment
	// was started WithWebhooks.
	Webhook *envtest.WebhookInstallOptions
	Config  *rest.Config
	Client  client.Client
	Scheme  *k8sruntime.Scheme
	// KubeConfig reaches the control plane as an administrator.
	KubeConfig []byte
}

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Scheme is the manager's scheme plus CAPI's Cluster, which the IPAM
// stand-in reads.
func Scheme() *k8sruntime.Scheme {
	s := scheme.New()
	utilruntime.Must(clusterv1.AddToScheme(s))
	return s
}

// Option changes what Start starts.
type Option func(*envtest.Environment)

// WithWebhooks also installs our webhook configurations (config/webhook),
// pointed at a local webhook server with a generated certificate.
func WithWebhooks() Option {
	return func(env *envtest.Environment) {
		env.WebhookInstallOptions.Paths = []string{filepath.Join(RepoRoot(), "config", "webhook")}
	}
}

// Start starts kube-apiserver and etcd and installs every CRD. The binaries
// come from KUBEBUILDER_ASSETS, or bin/k8s when it is unset (make
// kube-binaries builds them there).
func Start(options ...Option) (*Environment, error) {
	root := RepoRoot()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		assets := filepath.Join(root, "bin", "k8s")
		if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
			return nil, fmt.Errorf("no kube-apiserver in %s and KUBEBUILDER_ASSETS is unset: run `make kube-binaries`", assets)
		}
		os.Setenv("KUBEBUILDER_ASSETS", assets) //nolint:errcheck // envtest reads it
	}
	s := Scheme()
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "upstream"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// envtest's 20 s is too short for kube-apiserver to start (and, in
		// the e2e suite, to start again after a crash) on a loaded 2-core
		// machine: it timed out there while the process was still coming up.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	for _, option := range options {
		option(env)
	}
	config, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	c, err := client.New(config, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	environment := &Environment{env: env, Config: config, Client: c, Scheme: s, KubeConfig: env.KubeConfig}
	if len(env.WebhookInstallOptions.Paths) > 0 {
		environment.Webhook = &env.WebhookInstallOptions
	}
	return environment, nil
}

// Stop stops the control plane.
func (e *Environment) Stop() error {
	return e.env.Stop()
}
