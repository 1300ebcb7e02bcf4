//go:build e2e

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

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capm3-preprov/capm3-preprov/test/capm3webhook"
	"github.com/capm3-preprov/capm3-preprov/test/envtest"
	"github.com/capm3-preprov/capm3-preprov/test/ironic"
)

// LocalClusterInput configures the local mode.
type LocalClusterInput struct {
	ManagerBinary  string
	ArtifactFolder string
}

// LocalCluster is the local mode: kube-apiserver and etcd with every CRD (as
// test/envtest starts them, plus an audit log and a certificate folder of
// our own so the API server can be restarted), the garbage collector, the
// IPAM stand-in in this process, the manager as its own process, and
// Ironic's API with cloud-init as the consumers of the hosts' Secrets.
type LocalCluster struct {
	env          *ctrlenvtest.Environment
	gc           *envtest.GarbageCollector
	apiserverLog *os.File
	// dir holds the API server's certificates, the webhook serving
	// certificates and the kubeconfigs of the manager identities.
	dir string

	ManagerBinary  string
	ArtifactFolder string
	// AuditLog records, at level Metadata, every request of a
	// ServiceAccount identity: the managers, never the suite's admin.
	AuditLog string
	// WebhookPort is where the webhook configurations send admission
	// requests: the port of the installed manager's webhook server.
	WebhookPort    int
	webhookCertDir string

	IPAM *IPAMStandIn
	// stopCAPM3Webhook stops test/capm3webhook, which stands in for CAPM3's
	// Metal3DataTemplate webhook.
	stopCAPM3Webhook func() error
	// Manager is bin/manager installed as config/default installs it,
	// under the identity of its ServiceAccount.
	Manager *ManagerProcess
	// Consumers hand every set-up host's Secret to Ironic's API and to
	// cloud-init (consumers.go).
	Consumers *Consumers
}

// StartLocalCluster starts everything the local mode needs. On error, what
// was started is stopped.
func StartLocalCluster(ctx context.Context, input LocalClusterInput) (_ *Cluster, err error) {
	if _, err := os.Stat(input.ManagerBinary); err != nil {
		return nil, fmt.Errorf("the manager binary: %w (build it with `go build -o bin/manager .`)", err)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(envtest.RepoRoot(), "bin", "k8s")) //nolint:errcheck // envtest reads it
	}
	dir, err := os.MkdirTemp("", "capm3-preprov-e2e-")
	if err != nil {
		return nil, err
	}
	local := &LocalCluster{
		dir:            dir,
		ManagerBinary:  input.ManagerBinary,
		ArtifactFolder: input.ArtifactFolder,
		AuditLog:       filepath.Join(input.ArtifactFolder, "audit.log"),
		webhookCertDir: filepath.Join(dir, "webhook-certs"),
	}
	// Ironic takes about 10 s to answer, most of it Python imports: it
	// starts while the control plane does.
	ironicLog := filepath.Join(input.ArtifactFolder, "ironic.log")
	say("Starting Ironic's API (Debian's ironic-api and ironic-conductor, one process on loopback, fake hardware only), log %s", ironicLog)
	ironicStarted := make(chan error, 1)
	go func() {
		server, err := ironic.Start(ctx, ironic.Options{Dir: filepath.Join(dir, "ironic"), LogPath: ironicLog})
		if err == nil {
			local.Consumers, err = newConsumers(server, input.ArtifactFolder)
		}
		ironicStarted <- err
	}()
	waitIronic := sync.OnceValue(func() error { return <-ironicStarted })
	defer func() {
		if err != nil {
			_ = waitIronic()
			_ = local.Stop()
		}
	}()

	say("Starting a local control plane: kube-apiserver and etcd from $KUBEBUILDER_ASSETS, audit log %s", local.AuditLog)
	if err := local.startControlPlane(); err != nil {
		return nil, err
	}
	admin, err := client.NewWithWatch(local.env.Config, client.Options{Scheme: local.env.Scheme})
	if err != nil {
		return nil, err
	}
	cluster := &Cluster{Client: admin, Local: local, Intervals: localIntervals}

	say("Starting the garbage collector (kube-controller-manager --controllers=garbagecollector): owner references are enforced")
	local.gc, err = (&envtest.Environment{KubeConfig: local.env.KubeConfig}).StartGarbageCollector()
	if err != nil {
		return nil, err
	}

	say("IPAM: Metal3 IPAM is not running here; its stand-in from test/ipamstandin runs in this process " +
		"and allocates addresses by the upstream IPClaim/IPAddress contract")
	local.IPAM = &IPAMStandIn{Config: local.env.Config, Scheme: local.env.Scheme}
	if err := local.IPAM.Start(); err != nil {
		return nil, err
	}

	say("CAPM3: not running here; test/capm3webhook stands in for its Metal3DataTemplate webhook, " +
		"which refuses any change to a data template's networkData or metaData")
	if local.stopCAPM3Webhook, err = startCAPM3Webhook(local.env.Config, local.env.Scheme); err != nil {
		return nil, err
	}

	if local.WebhookPort, err = envtest.FreePort(); err != nil {
		return nil, err
	}
	caPEM, err := writeWebhookServingCerts(local.webhookCertDir)
	if err != nil {
		return nil, err
	}
	say("Installing config/default without the Deployment, Service and cert-manager objects; webhooks call https://127.0.0.1:%d",
		local.WebhookPort)
	if err := installDefaultConfig(ctx, admin, input.ArtifactFolder, local.WebhookPort, caPEM); err != nil {
		return nil, err
	}

	kubeconfig, err := local.kubeconfigFor(managerUser, managerNamespace)
	if err != nil {
		return nil, err
	}
	local.Manager = local.NewManagerProcess("manager", kubeconfig,
		fmt.Sprintf("--webhook-port=%d", local.WebhookPort),
		"--webhook-cert-dir="+local.webhookCertDir,
		"--leader-elect",
		"--leader-election-namespace="+managerNamespace,
	)
	if err := local.Manager.Start(); err != nil {
		return nil, err
	}
	say("Manager %s running as %s (pid %d), log %s", input.ManagerBinary, managerUser, local.Manager.PID(), local.Manager.LogPath)
	if err := waitIronic(); err != nil {
		return nil, fmt.Errorf("starting Ironic's API: %w", err)
	}
	say("Ironic's API answers at %s", local.Consumers.Ironic.URL)
	return cluster, nil
}

func (l *LocalCluster) startControlPlane() error {
	policy := filepath.Join(l.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	if err := os.Remove(l.AuditLog); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	certDir := filepath.Join(l.dir, "apiserver")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return err
	}
	var err error
	if l.apiserverLog, err = os.Create(filepath.Join(l.ArtifactFolder, "kube-apiserver.log")); err != nil {
		return err
	}
	root := envtest.RepoRoot()
	l.env = &ctrlenvtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "config", "crd", "upstream"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                envtest.Scheme(),
	}
	apiServer := l.env.ControlPlane.GetAPIServer()
	// A certificate folder of our own survives a stop, so a restarted API
	// server keeps its serving CA, its port and the client CA every
	// kubeconfig was issued by (a generated folder is removed on stop).
	apiServer.CertDir = certDir
	apiServer.Out, apiServer.Err = l.apiserverLog, l.apiserverLog
	apiServer.Configure().
		// A stop (at the end of the suite) drains requests and closes
		// watches within about 2 s; without it the HTTP server waits up to
		// --request-timeout (60 s) for the managers' watches.
		Set("shutdown-send-retry-after", "true").
		Set("audit-policy-file", policy).
		Set("audit-log-path", l.AuditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	if _, err := l.env.Start(); err != nil {
		return fmt.Errorf("starting the local control plane: %w", err)
	}
	return nil
}

// kubeconfigFor writes a kubeconfig for a ServiceAccount identity: a client
// certificate whose user name and groups are those the API server gives the
// ServiceAccount's tokens, so RBAC bindings to the ServiceAccount apply.
func (l *LocalCluster) kubeconfigFor(user, namespace string) (string, error) {
	authenticated, err := l.env.AddUser(ctrlenvtest.User{
		Name:   user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}, nil)
	if err != nil {
		return "", err
	}
	kubeconfig, err := authenticated.KubeConfig()
	if err != nil {
		return "", err
	}
	path, err := os.CreateTemp(l.dir, "kubeconfig-")
	if err != nil {
		return "", err
	}
	defer path.Close()
	_, err = path.Write(kubeconfig)
	return path.Name(), err
}

// NewManagerProcess prepares a manager process with its own identity: the
// ServiceAccount user of kubeconfigFor. Its log is <artifacts>/<name>.log.
func (l *LocalCluster) NewManagerProcess(name, kubeconfig string, args ...string) *ManagerProcess {
	return &ManagerProcess{
		Name:    name,
		LogPath: filepath.Join(l.ArtifactFolder, name+".log"),
		binary:  l.ManagerBinary,
		args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--diagnostics-address=127.0.0.1:0",
		}, args...),
	}
}

// ServiceAccountKubeconfig issues a kubeconfig for another ServiceAccount
// identity, for the specs that run a second manager.
func (l *LocalCluster) ServiceAccountKubeconfig(namespace, name string) (string, error) {
	return l.kubeconfigFor(serviceAccountUser(namespace, name), namespace)
}

// CrashAPIServer kills kube-apiserver with SIGKILL, as a crash or an OOM
// kill would, leaves it down for a while, as a restarting Pod is, and
// starts it again on the same port, with the same certificates and etcd.
// It returns the secure port it listened on before and listens on after.
func (l *LocalCluster) CrashAPIServer(down time.Duration) (before, after string, err error) {
	apiServer := l.env.ControlPlane.APIServer
	before = apiServer.SecureServing.Port
	pid, err := childProcess("kube-apiserver")
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
	return before, apiServer.SecureServing.Port, nil
}

// childProcess finds the one child of this process with this command name.
func childProcess(name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, closing := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(string(stat)[closing+1:])
		if string(stat)[open+1:closing] == name && len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("found %d child processes named %s, want 1", len(found), name)
	}
	return found[0], nil
}

// waitGone waits until a child process has exited and was reaped.
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("process %d still there after %s", pid, timeout)
}

// EnsureRunning starts the IPAM stand-in and the manager again if a spec
// stopped or killed them, so the next spec finds them running.
func (l *LocalCluster) EnsureRunning() error {
	if !l.IPAM.Running() {
		if err := l.IPAM.Start(); err != nil {
			return err
		}
	}
	if !l.Manager.Running() {
		return l.Manager.Start()
	}
	return nil
}

// Stop stops the managers, the IPAM stand-in, the garbage collector, the
// control plane and Ironic, and removes the certificates, the kubeconfigs
// and Ironic's database (its log stays with the artifacts).
func (l *LocalCluster) Stop() error {
	var errs []error
	if l.Consumers != nil {
		say("Consumers: %s", l.Consumers.Report())
		errs = append(errs, l.Consumers.Ironic.Stop())
	}
	if l.Manager != nil && l.Manager.Running() {
		errs = append(errs, l.Manager.Stop())
	}
	if l.IPAM != nil {
		errs = append(errs, l.IPAM.Stop())
	}
	if l.stopCAPM3Webhook != nil {
		errs = append(errs, l.stopCAPM3Webhook())
	}
	if l.gc != nil {
		errs = append(errs, l.gc.Stop())
	}
	if l.env != nil {
		errs = append(errs, l.env.Stop())
	}
	if l.apiserverLog != nil {
		errs = append(errs, l.apiserverLog.Close())
	}
	errs = append(errs, os.RemoveAll(l.dir))
	return errors.Join(errs...)
}

// startCAPM3Webhook serves the CAPM3 webhook stand-in until the returned
// function is called.
func startCAPM3Webhook(config *rest.Config, scheme *runtime.Scheme) (func() error, error) {
	ctx, cancel := context.WithCancel(context.Background())
	done, err := capm3webhook.Start(ctx, config, scheme)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() error {
		cancel()
		return <-done
	}, nil
}
