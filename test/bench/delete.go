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
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// deleteResult is what the delete scenario measured in one run.
type deleteResult struct {
	// controller and floor are, with the manager running and with it
	// stopped, from the first host's delete until the fleet's last IPClaim,
	// IPAddress and network data Secret was gone.
	controller, floor time.Duration
	// cpu is the CPU seconds each process used while the controller's fleet
	// was deleted.
	cpu map[string]float64
	// calls are the manager's requests in the fleet's namespace from the
	// first delete until settle after the fleet was gone.
	calls map[apiCall]int
	// stopFailure is how the manager failed to stop on SIGTERM after the
	// fleet was gone, if it did: a finding of the run, not a reason to lose
	// its measurements.
	stopFailure error
	// left is what the manager's fleet still had when the harness stopped
	// waiting at -delete-limit; then controller is the limit.
	left deleteLeft
}

// deleteLeft is what a deleted fleet still had when the harness stopped
// waiting for it.
type deleteLeft struct {
	// objects are its IPClaims, IPAddresses and network data Secrets.
	objects int
	// entries are its pools' spec.preAllocations entries.
	entries int
}

func (l deleteLeft) any() bool { return l.objects > 0 || l.entries > 0 }

// deletePhase lets the manager set the fleet up, deletes every host at once
// with the manager running, then does the same with the floor's fleet and
// no manager: the garbage collector and IPAM alone.
func (b *bench) deletePhase(ctx context.Context) (err error) {
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	_, manager, _, err := b.setUpWithManager(ctx, phaseCtx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, manager.Stop()) }()
	pids := b.cp.pids()
	pids["manager"], pids["harness"] = manager.PID(), os.Getpid()
	start, gone, cpu, left, err := b.deleteFleet(phaseCtx, controllerNamespace, pids, manager.running, b.cfg.deleteLimit)
	if err != nil {
		return err
	}
	b.result.deletion.controller, b.result.deletion.cpu, b.result.deletion.left = gone.Sub(start), cpu, left
	if err = sleepUntil(ctx, gone.Add(settle)); err != nil {
		return err
	}
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.deletion.calls = auditWindow{user: managerUser, namespace: controllerNamespace, from: start, to: time.Now()}.count(events)
	if b.result.deletion.stopFailure = manager.Stop(); b.result.deletion.stopFailure != nil {
		progressf("run %d: %v", b.result.run, b.result.deletion.stopFailure)
	}

	if err = b.floorPhase(ctx); err != nil {
		return err
	}
	start, gone, _, left, err = b.deleteFleet(phaseCtx, floorNamespace, b.cp.pids(), func() error { return nil }, 0)
	if err == nil && left.any() {
		err = fmt.Errorf("the floor's deletes left %d claims, addresses and Secrets", left.objects)
	}
	b.result.deletion.floor = gone.Sub(start)
	return err
}

// deleteFleet deletes every host of namespace, creators at a time, and
// returns when the first delete started, when the last claim, address and
// Secret of the fleet was gone, and the CPU each of pids used meanwhile.
// With a limit, it stops waiting that long after the first delete and
// returns the limit as the time taken, with what was left.
func (b *bench) deleteFleet(ctx context.Context, namespace string, pids map[string]int, alive func() error, limit time.Duration,
) (time.Time, time.Time, map[string]float64, deleteLeft, error) {
	watched, err := watchLeftovers(ctx, b.cp.Config, namespace)
	if err != nil {
		return time.Time{}, time.Time{}, nil, deleteLeft{}, err
	}
	progressf("run %d: deleting %d hosts in %s (%d claims, addresses and Secrets)", b.result.run, b.cfg.hosts, namespace, watched.count())
	cpu := startCPUMeter(pids)
	start := time.Now()
	waitCtx, stopWaiting := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		waitCtx, stopWaiting = context.WithDeadline(ctx, start.Add(limit))
	}
	defer stopWaiting()
	if err = deleteHosts(ctx, b.cp.Client, namespace, b.cfg.hosts); err != nil {
		return time.Time{}, time.Time{}, nil, deleteLeft{}, err
	}
	gone, err := watched.wait(waitCtx, b.result.run, alive)
	withEntries := b.cfg.poolPreallocations && namespace == controllerNamespace
	if err == nil && withEntries {
		gone, err = b.waitForNoPreallocations(waitCtx, namespace, gone, alive)
	}
	if err == nil || ctx.Err() != nil || waitCtx.Err() == nil {
		return start, gone, cpu.used(), deleteLeft{}, err
	}
	left := deleteLeft{objects: watched.count()}
	if withEntries {
		if left.entries, err = b.preallocationEntries(ctx, namespace); err != nil {
			return time.Time{}, time.Time{}, nil, deleteLeft{}, err
		}
	}
	progressf("run %d: delete: stopped waiting after %s with %d claims, addresses and Secrets and %d spec.preAllocations entries left",
		b.result.run, limit, left.objects, left.entries)
	return start, start.Add(limit), cpu.used(), left, nil
}

// preallocationEntries counts the namespace's pools' spec.preAllocations
// entries.
func (b *bench) preallocationEntries(ctx context.Context, namespace string) (int, error) {
	pools := &ipamv1.IPPoolList{}
	if err := b.cp.Client.List(ctx, pools, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	entries := 0
	for i := range pools.Items {
		entries += len(pools.Items[i].Spec.PreAllocations)
	}
	return entries, nil
}

// waitForNoPreallocations returns when the namespace's pools hold no
// spec.preAllocations entry any more (the manager removes those of
// deleted hosts), with when that was seen (within 200 ms), or gone if it
// was so at once.
func (b *bench) waitForNoPreallocations(ctx context.Context, namespace string, gone time.Time, alive func() error) (time.Time, error) {
	for said := time.Now(); ; {
		entries, err := b.preallocationEntries(ctx, namespace)
		if err != nil {
			return time.Time{}, err
		}
		if entries == 0 {
			return gone, nil
		}
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		if time.Since(said) >= 10*time.Second {
			progressf("run %d: delete: %d spec.preAllocations entries left", b.result.run, entries)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("delete: %d spec.preAllocations entries left when the run was stopped: %w", entries, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		gone = time.Now()
	}
}

// deleteHosts deletes hosts 0 to n-1 of namespace, creators at a time.
func deleteHosts(ctx context.Context, c client.Client, namespace string, n int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	indexes := make(chan int)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for i := range indexes {
				host := &bmov1alpha1.BareMetalHost{}
				host.Namespace, host.Name = namespace, hostName(i)
				if err := c.Delete(ctx, host); err != nil {
					cancel(fmt.Errorf("deleting BareMetalHost %s: %w", host.Name, err))
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case indexes <- i:
		case <-ctx.Done():
		}
	}
	close(indexes)
	wg.Wait()
	return context.Cause(ctx)
}

// leftovers counts what a namespace's hosts leave when deleted, IPClaims,
// IPAddresses and network data Secrets, as a watch sees them, and notes
// when the last one went.
type leftovers struct {
	mu       sync.Mutex
	objects  int
	lastGone time.Time
	none     chan struct{}
}

// watchLeftovers watches namespace until ctx ends; it returns once its
// watches have listed what there is.
func watchLeftovers(ctx context.Context, config *rest.Config, namespace string) (*leftovers, error) {
	l := &leftovers{none: make(chan struct{})}
	informers, err := cache.New(config, cache.Options{
		Scheme:            framework.Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&ipamv1.IPClaim{}, &ipamv1.IPAddress{}, &corev1.Secret{}} {
		informer, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: l.added, DeleteFunc: l.deleted}); err != nil {
			return nil, err
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watching the claims, addresses and Secrets of %s: %w", namespace, ctx.Err())
	}
	return l, nil
}

// counted is an object the fleet's hosts leave: not the Secrets of others.
func counted(obj any) bool {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	secret, isSecret := obj.(*corev1.Secret)
	return !isSecret || strings.HasSuffix(secret.Name, preprovv1.NetworkDataSecretSuffix)
}

func (l *leftovers) added(obj any) {
	if !counted(obj) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objects++
}

func (l *leftovers) deleted(obj any) {
	if !counted(obj) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objects--
	if l.objects == 0 && l.lastGone.IsZero() {
		l.lastGone = time.Now()
		close(l.none)
	}
}

func (l *leftovers) goneAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastGone
}

func (l *leftovers) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.objects
}

// wait returns when nothing is left, with the time the last object went,
// saying how far it got every 10 s and stopping early when alive reports a
// failure.
func (l *leftovers) wait(ctx context.Context, run int, alive func() error) (time.Time, error) {
	start := time.Now()
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-l.none:
			return l.goneAt(), nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("delete: %d claims, addresses and Secrets left when the run was stopped: %w", l.count(), ctx.Err())
		case <-ticker.C:
			if err := alive(); err != nil {
				return time.Time{}, err
			}
			progressf("run %d: delete: %d claims, addresses and Secrets left after %s", run, l.count(), time.Since(start).Round(time.Second))
		}
	}
}
