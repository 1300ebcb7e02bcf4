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

// Package framework is the test harness every suite shares, after Cluster
// API's test/framework: one control plane (the real kube-apiserver and etcd
// built under bin/k8s, with our CRDs and the upstream ones), the processes
// that run next to it (kube-controller-manager's garbage collector, the
// CAPM3 webhook and the two IPAM stand-ins, bin/manager as its own process) and
// what the suites read from it (audit log, metrics, counted writes). The
// envtest suites, the e2e suite, the benchmark and `make run` start their
// control planes here; test/framework/fixtures builds the objects they create.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
	"github.com/capm3-preprov/capm3-preprov/test/standins/capm3webhook"
)

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0) //nolint:dogsled // of runtime.Caller's results only the file is needed
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Scheme is the manager's scheme (scheme.New), which holds CAPI's Cluster
// that the IPAM stand-ins read, and the stand-in's InClusterIPPool, whose
// CRD every control plane installs: tests create pools as typed objects.
func Scheme() *k8sruntime.Scheme {
	testScheme := scheme.New()
	utilruntime.Must(inclusterv1alpha2.AddToScheme(testScheme))
	return testScheme
}

// UseKubeBinaries points envtest at bin/k8s unless KUBEBUILDER_ASSETS says
// otherwise (make kube-binaries builds them there).
func UseKubeBinaries() error {
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		return nil
	}
	assets := filepath.Join(RepoRoot(), "bin", "k8s")
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return fmt.Errorf("no kube-apiserver in %s and KUBEBUILDER_ASSETS is unset: run `make kube-binaries`", assets)
	}
	return os.Setenv("KUBEBUILDER_ASSETS", assets)
}

// StartControlPlaneInput says what runs with the control plane besides
// kube-apiserver and etcd with every CRD.
type StartControlPlaneInput struct {
	// Webhooks installs our webhook configurations as `kustomize build
	// config/webhook` gives them, pointed at a local webhook server with a
	// generated certificate (ControlPlane.Webhook says where).
	Webhooks bool
	// CAPM3Webhook serves test/standins/capm3webhook, which stands in for CAPM3's
	// Metal3DataTemplate webhook (no edit of networkData or metaData).
	CAPM3Webhook bool
	// GarbageCollector runs kube-controller-manager's garbage collector,
	// which enforces owner references.
	GarbageCollector bool
	// AuditPolicy, an audit.k8s.io/v1 Policy, makes the API server record
	// the requests it selects into AuditLog, one JSON event a line
	// (ReadAuditLog reads them). Blocking mode: an event is written before
	// its request returns, so a test that waited on an object sees its writes.
	AuditPolicy string
	AuditLog    string
	// APIServerLog, when set, is the file kube-apiserver's output goes to.
	APIServerLog string
}

// ControlPlane is a running test control plane.
type ControlPlane struct {
	env *envtest.Environment
	// dir holds the API server's certificates, the audit policy and the
	// kubeconfigs the control plane hands out.
	dir              string
	apiServerLog     *os.File
	gc               *garbageCollector
	stopCAPM3Webhook func() error

	// Webhook tells a webhook server where to serve, when the control plane
	// was started with Webhooks.
	Webhook *envtest.WebhookInstallOptions
	// Config and Client reach the control plane as an administrator.
	Config *rest.Config
	Client client.WithWatch
	Scheme *k8sruntime.Scheme
	// KubeConfig reaches the control plane as an administrator.
	KubeConfig []byte
}

// StartControlPlane starts kube-apiserver and etcd from KUBEBUILDER_ASSETS
// (bin/k8s when unset), installs every CRD and starts what input asks for.
// On error, what was started is stopped.
func StartControlPlane(input StartControlPlaneInput) (_ *ControlPlane, err error) {
	if err = UseKubeBinaries(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "capm3-preprov-control-plane-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{dir: dir, Scheme: Scheme()}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
		}
	}()
	root := RepoRoot()
	cp.env = &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "upstream"),
			// The Cluster API IPAM stand-in's InClusterIPPool.
			filepath.Join(root, "test", "standins", "capiipamstandin", "crd"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                cp.Scheme,
		// envtest's 20 s is too short for kube-apiserver to start (and, in
		// the e2e suite, to start again after a crash) on a loaded 2-core
		// machine: it timed out there while the process was still coming up.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if input.Webhooks {
		// As config/webhook builds them: its patches (the auto-pause
		// webhook's namespaceSelector) are part of what is installed.
		webhooks := filepath.Join(cp.dir, "webhooks.yaml")
		if _, err = KustomizeBuild(context.Background(), "webhook", webhooks); err != nil {
			return nil, err
		}
		cp.env.WebhookInstallOptions.Paths = []string{webhooks}
	}
	if err = cp.configureAPIServer(input); err != nil {
		return nil, err
	}
	if cp.Config, err = cp.env.Start(); err != nil {
		return nil, fmt.Errorf("starting the test control plane: %w", err)
	}
	cp.KubeConfig = cp.env.KubeConfig
	if cp.Client, err = client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme}); err != nil {
		return nil, err
	}
	if input.Webhooks {
		cp.Webhook = &cp.env.WebhookInstallOptions
	}
	if input.GarbageCollector {
		if cp.gc, err = startGarbageCollector(cp.dir, cp.KubeConfig); err != nil {
			return nil, err
		}
	}
	if input.CAPM3Webhook {
		if err = cp.startCAPM3Webhook(); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

func (cp *ControlPlane) configureAPIServer(input StartControlPlaneInput) error {
	apiServer := cp.env.ControlPlane.GetAPIServer()
	// A certificate folder of our own survives a stop, so a restarted API
	// server keeps its serving CA, its port and the client CA every
	// kubeconfig was issued by (a generated folder is removed on stop).
	apiServer.CertDir = filepath.Join(cp.dir, "apiserver")
	if err := os.Mkdir(apiServer.CertDir, 0o700); err != nil {
		return err
	}
	// A stop drains requests and closes watches within about 2 s; without
	// it the HTTP server waits up to --request-timeout (60 s) for the
	// managers' watches.
	apiServer.Configure().Set("shutdown-send-retry-after", "true")
	if input.APIServerLog != "" {
		var err error
		if cp.apiServerLog, err = os.Create(input.APIServerLog); err != nil {
			return err
		}
		apiServer.Out, apiServer.Err = cp.apiServerLog, cp.apiServerLog
	}
	if input.AuditPolicy == "" {
		return nil
	}
	policy := filepath.Join(cp.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(input.AuditPolicy), 0o600); err != nil {
		return err
	}
	if err := os.Remove(input.AuditLog); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	apiServer.Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", input.AuditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return nil
}

// startCAPM3Webhook serves the CAPM3 webhook stand-in until Stop.
func (cp *ControlPlane) startCAPM3Webhook() error {
	ctx, cancel := context.WithCancel(context.Background())
	done, err := capm3webhook.Start(ctx, cp.Config, cp.Scheme)
	if err != nil {
		cancel()
		return err
	}
	cp.stopCAPM3Webhook = func() error {
		cancel()
		return <-done
	}
	return nil
}

// Stop stops the CAPM3 webhook stand-in, the garbage collector, the API
// server and etcd, and removes the control plane's files (an audit log and
// an API server log stay where the input put them).
func (cp *ControlPlane) Stop() error {
	var errs []error
	if cp.stopCAPM3Webhook != nil {
		errs = append(errs, cp.stopCAPM3Webhook())
	}
	if cp.gc != nil {
		cp.gc.stop()
	}
	if cp.Config != nil {
		errs = append(errs, cp.env.Stop())
	}
	if cp.apiServerLog != nil {
		errs = append(errs, cp.apiServerLog.Close())
	}
	errs = append(errs, os.RemoveAll(cp.dir))
	return errors.Join(errs...)
}

// CrashAPIServer kills kube-apiserver with SIGKILL, as a crash or an OOM
// kill would, leaves it down for a while, as a restarting Pod is, and
// starts it again on the same port, with the same certificates and etcd.
// It returns the secure port it listened on before and listens on after.
func (cp *ControlPlane) CrashAPIServer(down time.Duration) (before, after string, err error) {
	apiServer := cp.env.ControlPlane.APIServer
	before = apiServer.Port
	pid, err := ChildProcess("kube-apiserver")
	if err != nil {
		return before, "", err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return before, "", err
	}
	if err := waitGone(pid, time.Minute); err != nil {
		return before, "", err
	}
	time.Sleep(down)
	// envtest has seen its process exit: Stop only marks it stopped.
	if err := apiServer.Stop(); err != nil {
		return before, "", fmt.Errorf("marking the killed kube-apiserver stopped: %w", err)
	}
	if err := apiServer.Start(); err != nil {
		return before, "", fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return before, apiServer.Port, nil
}
