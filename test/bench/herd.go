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
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// herdPoolSize is how many addresses the herd scenario's one pool has.
const herdPoolSize = 10

// herdResult is what the herd scenario measured in one run.
type herdResult struct {
	// freed is how many addresses the deleted hosts freed.
	freed int
	// taken is how long, from the first delete, until waiting hosts had
	// taken every freed address.
	taken time.Duration
	// calls are the manager's requests in the fleet's namespace from the
	// first delete until it was quiet.
	calls map[apiCall]int
}

// herdPhase registers more hosts than a pool of herdPoolSize addresses can
// serve, lets the manager set up as many as it can (the others' claims
// fail), deletes the hosts set up, and counts the manager's claim writes
// until the freed addresses are taken and it is quiet again.
func (b *bench) herdPhase(ctx context.Context) (err error) {
	if err = createHerdFleet(ctx, b.cp.Client, b.cfg.hosts); err != nil {
		return err
	}
	manager, err := b.startManager("manager")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, manager.Stop()) }()
	pids := b.cp.pids()
	pids["manager"], pids["harness"] = manager.PID(), os.Getpid()
	setUp, err := waitForHerd(ctx, b.cp.Client, b.cfg.hosts, nil, manager.running)
	if err != nil {
		return err
	}
	if _, err = b.waitForQuiet(ctx, manager); err != nil {
		return err
	}
	progressf("run %d: %d hosts set up, %d waiting; deleting the set-up ones", b.result.run, len(setUp), b.cfg.hosts-len(setUp))
	start := time.Now()
	for _, name := range setUp {
		host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: name}}
		if err = b.cp.Client.Delete(ctx, host); err != nil {
			return fmt.Errorf("deleting BareMetalHost %s: %w", name, err)
		}
	}
	if _, err = waitForHerd(ctx, b.cp.Client, b.cfg.hosts-len(setUp), setUp, manager.running); err != nil {
		return err
	}
	b.result.herd.freed, b.result.herd.taken = len(setUp), time.Since(start)
	quiet, err := b.waitForQuiet(ctx, manager)
	if err != nil {
		return err
	}
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.herd.calls = auditWindow{user: managerUser, namespace: controllerNamespace, from: start, to: quiet.Add(time.Second)}.count(events)
	return nil
}

// createHerdFleet creates the namespace, its one pool of herdPoolSize
// addresses, a template drawing every host's address from it, and n paused
// hosts.
func createHerdFleet(ctx context.Context, c client.Client, n int) error {
	selector := map[string]string{"role": "worker"}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}},
		fixtures.Pool(controllerNamespace, "herd", "10.30.0.10", fmt.Sprintf("10.30.0.%d", 10+herdPoolSize-1), "10.30.0.1"),
		fixtures.PreprovisioningTemplate(controllerNamespace, "herd", selector, fixtures.PoolNetworkData("herd")),
	}
	for i := range n {
		objects = append(objects, fixtures.Host(controllerNamespace, hostName(i), fixtures.MAC(controllerNamespace, 1, i), selector))
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// waitForHerd waits, polling every second, until herdPoolSize of the
// hosts (those not in gone) have their network data Secret and the claims
// of the others failed, and returns the hosts set up.
func waitForHerd(ctx context.Context, c client.Client, hosts int, gone []string, alive func() error) ([]string, error) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		setUp, failed, err := herdState(ctx, c, gone)
		if err != nil {
			return nil, err
		}
		if len(setUp) == herdPoolSize && len(failed) == hosts-herdPoolSize {
			return setUp, nil
		}
		if err := alive(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d hosts set up and %d failed claims (%d and %d): %w",
				herdPoolSize, hosts-herdPoolSize, len(setUp), len(failed), ctx.Err())
		case <-ticker.C:
		}
	}
}

// herdState lists the hosts with a network data Secret and those whose
// claim failed, leaving out the hosts in gone.
func herdState(ctx context.Context, c client.Client, gone []string) ([]string, []string, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(controllerNamespace)); err != nil {
		return nil, nil, err
	}
	claims := &ipamv1.IPClaimList{}
	if err := c.List(ctx, claims, client.InNamespace(controllerNamespace)); err != nil {
		return nil, nil, err
	}
	isGone := map[string]bool{}
	for _, name := range gone {
		isGone[name] = true
	}
	var setUp, failed []string
	for _, secret := range secrets.Items {
		host, ours := strings.CutSuffix(secret.Name, preprovv1.NetworkDataSecretSuffix)
		if ours && !isGone[host] {
			setUp = append(setUp, host)
		}
	}
	for _, claim := range claims.Items {
		host, _ := strings.CutSuffix(claim.Name, "-herd")
		if claim.Status.ErrorMessage != nil && claim.DeletionTimestamp.IsZero() && !isGone[host] {
			failed = append(failed, host)
		}
	}
	return setUp, failed, nil
}
