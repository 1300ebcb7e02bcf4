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
	"maps"
	"slices"
	"sync"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// handoffResult is what the handoff scenario measured in one run.
type handoffResult struct {
	// setup is from the hosts' creation until the manager had set every
	// host up.
	setup time.Duration
	// provisioning is how long the simulated CAPM3 took to provision every
	// host; handedOver from its start until the last claim had its owner.
	provisioning, handedOver time.Duration
	// latencies are, per claim, from its host's Metal3Data being created to
	// the claim having it as an owner, seen by a watch in the harness.
	latencies []time.Duration
	// calls are the manager's requests in the fleet's namespace from the
	// simulated CAPM3's start until the steady window; steadyCalls those in
	// the steady window, in any namespace.
	calls, steadyCalls map[apiCall]int
}

// handoffPhase lets the manager set the fleet up, then provisions every host
// as CAPM3 does and measures how the manager hands the claims over.
func (b *bench) handoffPhase(ctx context.Context) (err error) {
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	registered, manager, lastDone, err := b.setUpWithManager(ctx, phaseCtx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, manager.Stop()) }()
	b.result.handoff.setup = lastDone.Sub(registered.start)

	owners, err := startOwnerTracker(phaseCtx, b.cp.Config, controllerNamespace, b.cfg.hosts*len(pools))
	if err != nil {
		return err
	}
	progressf("run %d: a simulated CAPM3 provisions %d hosts", b.result.run, b.cfg.hosts)
	start := time.Now()
	created, err := b.provisionAsCAPM3(ctx)
	if err != nil {
		return err
	}
	b.result.handoff.provisioning = time.Since(start)
	lastOwned, err := owners.wait(ctx, b.result.run, manager)
	if err != nil {
		return err
	}
	b.result.handoff.handedOver = lastOwned.Sub(start)
	ownedAt := owners.ownedAt()
	for i, at := range created {
		for _, pool := range pools {
			b.result.handoff.latencies = append(b.result.handoff.latencies, ownedAt[ipam.ClaimName(hostName(i), pool)].Sub(at))
		}
	}

	steadyFrom := lastOwned.Add(settle)
	steadyTo := steadyFrom.Add(b.cfg.steady)
	progressf("run %d: every claim is handed over; steady state until %s", b.result.run, steadyTo.Format(time.TimeOnly))
	if err = sleepUntil(ctx, steadyTo); err != nil {
		return err
	}
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.handoff.calls = auditWindow{user: managerUser, namespace: controllerNamespace, from: start, to: steadyFrom}.count(events)
	b.result.handoff.steadyCalls = auditWindow{user: managerUser, from: steadyFrom, to: steadyTo}.count(events)
	return nil
}

// setUpWithManager registers the fleet in the controller's namespace, watched
// until phaseCtx ends, and lets a manager set it up until it is quiet. It
// returns the manager running, for the caller to stop, and when the last
// host was done.
func (b *bench) setUpWithManager(ctx, phaseCtx context.Context) (registeredFleet, *managerProcess, time.Time, error) {
	registered, err := b.registerFleet(phaseCtx, controllerNamespace, "", &b.result.controller)
	if err != nil {
		return registeredFleet{}, nil, time.Time{}, err
	}
	manager, err := b.startManager("manager")
	if err != nil {
		return registeredFleet{}, nil, time.Time{}, err
	}
	lastDone, err := waitForHosts(ctx, "set-up", registered.tracker, manager.running)
	if err == nil {
		_, err = b.waitForQuiet(ctx, manager)
	}
	if err != nil {
		return registeredFleet{}, nil, time.Time{}, errors.Join(err, manager.Stop())
	}
	return registered, manager, lastDone, nil
}

// provisionAsCAPM3 provisions every host as CAPM3 does, creators at a time,
// and returns when each host's Metal3Data was created.
func (b *bench) provisionAsCAPM3(ctx context.Context) ([]time.Time, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	created := make([]time.Time, b.cfg.hosts)
	indexes := make(chan int)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for i := range indexes {
				rack := "rack-" + rackOf(i)
				_, err := framework.ProvisionAsCAPM3(ctx, b.cp.Client, controllerNamespace, hostName(i),
					fmt.Sprintf("%s-m3m-%05d", rack, i), fmt.Sprintf("%s-%d", rack, i), rack)
				if err != nil {
					cancel(err)
					return
				}
				created[i] = time.Now()
			}
		})
	}
	for i := range b.cfg.hosts {
		select {
		case indexes <- i:
		case <-ctx.Done():
		}
	}
	close(indexes)
	wg.Wait()
	return created, context.Cause(ctx)
}

// ownerTracker watches the fleet's IPClaims and notes when each first has a
// Metal3Data among its owners.
type ownerTracker struct {
	mu        sync.Mutex
	expected  int
	owned     map[string]time.Time
	allOwned  chan struct{}
	lastOwned time.Time
}

// startOwnerTracker watches the claims of namespace until ctx ends; it
// returns once its watch is established.
func startOwnerTracker(ctx context.Context, config *rest.Config, namespace string, expected int) (*ownerTracker, error) {
	t := &ownerTracker{expected: expected, owned: map[string]time.Time{}, allOwned: make(chan struct{})}
	informers, err := cache.New(config, cache.Options{
		Scheme:            framework.Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	claims, err := informers.GetInformer(ctx, &ipamv1.IPClaim{})
	if err != nil {
		return nil, err
	}
	if _, err = claims.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    t.onClaim,
		UpdateFunc: func(_, obj any) { t.onClaim(obj) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)
	return t, ctx.Err()
}

func (t *ownerTracker) onClaim(obj any) {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok || !slices.ContainsFunc(claim.OwnerReferences, ownership.IsMetal3Data) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.owned[claim.Name]; seen {
		return
	}
	t.owned[claim.Name] = now
	t.lastOwned = now
	if len(t.owned) == t.expected {
		close(t.allOwned)
	}
}

// wait returns when every claim has a Metal3Data owner, with the time the
// last one got it, saying how far it got every 10 s.
func (t *ownerTracker) wait(ctx context.Context, run int, manager *managerProcess) (time.Time, error) {
	start := time.Now()
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-t.allOwned:
			t.mu.Lock()
			last := t.lastOwned
			t.mu.Unlock()
			return last, nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("handoff: %d of %d claims handed over when the run was stopped: %w", len(t.ownedAt()), t.expected, ctx.Err())
		case <-ticker.C:
			if err := manager.running(); err != nil {
				return time.Time{}, err
			}
			progressf("run %d: handoff: %d/%d claims handed over after %s", run, len(t.ownedAt()), t.expected, time.Since(start).Round(time.Second))
		}
	}
}

// ownedAt is when each claim first had a Metal3Data owner.
func (t *ownerTracker) ownedAt() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.owned)
}
