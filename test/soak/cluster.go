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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/standins/bmomodel"
)

// The install of config/default, as kustomize names it: the manager runs
// under its ServiceAccount, with exactly the RBAC users install.
const (
	managerNamespace      = "capm3-preprov-system"
	managerServiceAccount = "capm3-preprov-manager"
	// namespace holds everything the soak creates.
	namespace = "soak"
	// fieldOwner applies config/default.
	fieldOwner = "capm3-preprov-soak"
)

// auditPolicy records the requests of ServiceAccount identities (the
// manager; the soak, IPAM and BMO's models and the garbage collector run
// as administrators) at level Metadata: enough to see a refused request.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

// needsPods are the kinds of config/default that need pods or cert-manager,
// and the webhook configurations: the manager runs as a process without a
// webhook server (the soak creates only valid templates).
var needsPods = map[string]bool{
	"Deployment": true, "Service": true, "Certificate": true, "Issuer": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
}

// cluster is what the soak runs against: a control plane with the garbage
// collector, Metal3 IPAM's stand-in and BMO's model in this process, and
// bin/manager as its own process under its ServiceAccount.
type cluster struct {
	cp      *framework.ControlPlane
	c       client.Client
	ipam    *framework.IPAMStandIn
	model   *bmomodel.Model
	manager *framework.ManagerProcess
	audit   *auditReader
	stop    context.CancelFunc
	// modelDone gives the end of BMO's model.
	modelDone <-chan error
}

func startCluster(ctx context.Context, managerBinary, artifacts string) (_ *cluster, err error) {
	if _, err = os.Stat(managerBinary); err != nil {
		return nil, fmt.Errorf("the manager binary: %w (make build)", err)
	}
	c := &cluster{audit: &auditReader{newLines{path: filepath.Join(artifacts, "audit.log")}}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.close())
		}
	}()
	if c.cp, err = framework.StartControlPlane(framework.StartControlPlaneInput{
		GarbageCollector: true,
		AuditPolicy:      auditPolicy,
		AuditLog:         c.audit.path,
		APIServerLog:     filepath.Join(artifacts, "kube-apiserver.log"),
	}); err != nil {
		return nil, err
	}
	c.c = c.cp.Client
	if err = installRBAC(ctx, c.c, artifacts); err != nil {
		return nil, err
	}
	if err = c.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, err
	}
	if c.ipam, err = framework.StartIPAMStandIn(c.cp.Config); err != nil {
		return nil, err
	}
	modelCtx, stop := context.WithCancel(context.Background())
	c.stop = stop
	if c.model, c.modelDone, err = bmomodel.Start(modelCtx, c.cp.Config, c.cp.Scheme); err != nil {
		return nil, err
	}
	kubeconfig, err := c.cp.ServiceAccountKubeconfig(managerNamespace, managerServiceAccount)
	if err != nil {
		return nil, err
	}
	c.manager = &framework.ManagerProcess{
		Name:    "manager",
		Binary:  managerBinary,
		LogPath: filepath.Join(artifacts, "manager.log"),
		Args:    []string{"--kubeconfig=" + kubeconfig, "--webhook-port=0", "--pool-preallocations"},
	}
	return c, c.manager.Start()
}

// installRBAC installs what users get from config/default (our CRD, the
// namespace, ServiceAccount and RBAC) without what needs pods.
func installRBAC(ctx context.Context, c client.Client, artifacts string) error {
	objects, err := framework.KustomizeBuild(ctx, "default", filepath.Join(artifacts, "config-default.yaml"))
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if needsPods[obj.GetKind()] {
			continue
		}
		if err := apply(ctx, c, obj); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	obj.SetResourceVersion("")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// close stops the manager, the models and the control plane.
func (c *cluster) close() error {
	var errs []error
	if c.manager != nil {
		errs = append(errs, c.manager.Stop())
	}
	if c.ipam != nil {
		errs = append(errs, c.ipam.Stop())
	}
	if c.stop != nil {
		c.stop()
		if c.modelDone != nil {
			errs = append(errs, <-c.modelDone)
		}
	}
	if c.cp != nil {
		errs = append(errs, c.cp.Stop())
	}
	return errors.Join(errs...)
}
