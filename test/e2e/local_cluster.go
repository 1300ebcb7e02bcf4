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
	"sync"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// LocalClusterInput configures the local mode.
type LocalClusterInput struct {
	ManagerBinary  string
	ArtifactFolder string
}

// LocalCluster is the local mode: the framework's control plane with an
// audit log, the garbage collector and the CAPM3 webhook stand-in, the two IPAM
// stand-ins in this process, the manager as its own process, and Ironic's
// API with cloud-init as the consumers of the hosts' Secrets.
type LocalCluster struct {
	ControlPlane *framework.ControlPlane
	// dir holds the webhook serving certificates.
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

	IPAM *framework.IPAMStandIn
	// CAPIIPAM plays the Cluster API in-cluster IPAM provider.
	CAPIIPAM *framework.CAPIIPAMStandIn
	// Manager is bin/manager installed as config/default installs it,
	// under the identity of its ServiceAccount.
	Manager *framework.ManagerProcess
	// Consumers hand every set-up host's Secret to Ironic's API and to
	// cloud-init (consumers.go).
	Consumers *Consumers
}

// StartLocalCluster starts everything the local mode needs. On error, what
// was started is stopped.
func StartLocalCluster(ctx context.Context, input LocalClusterInput) (_ *Cluster, err error) {
	if _, err = os.Stat(input.ManagerBinary); err != nil {
		return nil, fmt.Errorf("the manager binary: %w (build it with `go build -o bin/manager .`)", err)
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
	// Ironic takes half a minute or more to answer, most of it Python
	// imports: it starts while the control plane does.
	ironicLog := filepath.Join(input.ArtifactFolder, "ironic.log")
	sayf("Starting Ironic 29 (Debian 13's ironic-api and ironic-conductor in bin/debian13-root, one process on loopback: "+
		"fake hardware for the consumers' checks, and redfish with virtual media and agent inspection for the ramdisk story "+
		"at %s), log %s", ironic.ProvisioningAddress, ironicLog)
	ironicStarted := make(chan error, 1)
	go func() {
		server, startErr := ironic.Start(ctx, ironic.Options{Dir: filepath.Join(dir, "ironic"), LogPath: ironicLog})
		if startErr == nil {
			local.Consumers, startErr = newConsumers(server, input.ArtifactFolder)
		}
		ironicStarted <- startErr
	}()
	waitIronic := sync.OnceValue(func() error { return <-ironicStarted })
	defer func() {
		if err != nil {
			_ = waitIronic()
			_ = local.Stop()
		}
	}()

	sayf("Starting a local control plane: kube-apiserver and etcd from $KUBEBUILDER_ASSETS, audit log %s; "+
		"the garbage collector (kube-controller-manager --controllers=garbagecollector): owner references are enforced; "+
		"CAPM3 is not running here: test/standins/capm3webhook stands in for its Metal3DataTemplate webhook, "+
		"which refuses any change to a data template's networkData or metaData", local.AuditLog)
	local.ControlPlane, err = framework.StartControlPlane(framework.StartControlPlaneInput{
		AuditPolicy:      auditPolicy,
		AuditLog:         local.AuditLog,
		APIServerLog:     filepath.Join(input.ArtifactFolder, "kube-apiserver.log"),
		GarbageCollector: true,
		CAPM3Webhook:     true,
	})
	if err != nil {
		return nil, err
	}
	admin := local.ControlPlane.Client
	cluster := &Cluster{Client: admin, Local: local, Intervals: localIntervals}

	sayf("IPAM: Metal3 IPAM is not running here; its stand-in from test/standins/ipamstandin runs in this process " +
		"and allocates addresses by the upstream IPClaim/IPAddress contract")
	if local.IPAM, err = framework.StartIPAMStandIn(local.ControlPlane.Config); err != nil {
		return nil, err
	}
	sayf("IPAM: the Cluster API in-cluster IPAM provider is not running here; its stand-in from test/standins/capiipamstandin " +
		"runs in this process and serves InClusterIPPools by the upstream IPAddressClaim/IPAddress contract")
	if local.CAPIIPAM, err = framework.StartCAPIIPAMStandIn(local.ControlPlane.Config); err != nil {
		return nil, err
	}

	if local.WebhookPort, err = framework.FreePort(); err != nil {
		return nil, err
	}
	caPEM, err := writeWebhookServingCerts(local.webhookCertDir)
	if err != nil {
		return nil, err
	}
	sayf("Installing config/default without the Deployment, Service and cert-manager objects; webhooks call https://127.0.0.1:%d",
		local.WebhookPort)
	if err = installDefaultConfig(ctx, admin, input.ArtifactFolder, local.WebhookPort, caPEM); err != nil {
		return nil, err
	}

	kubeconfig, err := local.ControlPlane.ServiceAccountKubeconfig(managerNamespace, managerServiceAccount)
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
	sayf("Manager %s running as %s (pid %d), log %s", input.ManagerBinary, managerUser, local.Manager.PID(), local.Manager.LogPath)
	if err := waitIronic(); err != nil {
		return nil, fmt.Errorf("starting Ironic's API: %w", err)
	}
	sayf("Ironic's API answers at %s", local.Consumers.Ironic.URL)
	return cluster, nil
}

// NewManagerProcess prepares bin/manager as a process with its own
// identity (a kubeconfig of ControlPlane.ServiceAccountKubeconfig). Its log
// is <artifacts>/<name>.log.
func (l *LocalCluster) NewManagerProcess(name, kubeconfig string, args ...string) *framework.ManagerProcess {
	return &framework.ManagerProcess{
		Name:    name,
		Binary:  l.ManagerBinary,
		LogPath: filepath.Join(l.ArtifactFolder, name+".log"),
		Args:    append([]string{"--kubeconfig=" + kubeconfig}, args...),
	}
}

// EnsureRunning starts the IPAM stand-ins and the manager again if a spec
// stopped or killed them, so the next spec finds them running.
func (l *LocalCluster) EnsureRunning() error {
	if !l.IPAM.Running() {
		if err := l.IPAM.Start(); err != nil {
			return err
		}
	}
	if !l.CAPIIPAM.Running() {
		if err := l.CAPIIPAM.Start(); err != nil {
			return err
		}
	}
	if !l.Manager.Running() {
		return l.Manager.Start()
	}
	return nil
}

// Stop stops Ironic, the manager, the IPAM stand-ins and the control plane,
// and removes the certificates and Ironic's database (its log stays with
// the artifacts).
func (l *LocalCluster) Stop() error {
	var errs []error
	if l.Consumers != nil {
		sayf("Consumers: %s", l.Consumers.Report())
		errs = append(errs, l.Consumers.Ironic.Stop())
	}
	if l.Manager != nil {
		errs = append(errs, l.Manager.Stop())
	}
	if l.IPAM != nil {
		errs = append(errs, l.IPAM.Stop())
	}
	if l.CAPIIPAM != nil {
		errs = append(errs, l.CAPIIPAM.Stop())
	}
	if l.ControlPlane != nil {
		errs = append(errs, l.ControlPlane.Stop())
	}
	errs = append(errs, os.RemoveAll(l.dir))
	return errors.Join(errs...)
}
