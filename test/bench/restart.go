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
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// The controllers whose catch-up the restart scenario waits for, as their
// metrics name them.
const (
	hostController     = "baremetalhost"
	templateController = "metal3preprovisioningtemplate"
)

// leaderElectionID is the Lease both managers of the leader change compete for.
const leaderElectionID = "bench-leader"

// restartResult is what the restart scenario measured in one run.
type restartResult struct {
	// setup is from the first manager's start until every host was done.
	setup time.Duration
	// restart is a fresh manager started on the set-up fleet; takeover is
	// the standby of two leader-electing managers once the leader is killed.
	restart, takeover catchUp
}

// catchUp is one manager catching up with a fleet it did not set up.
type catchUp struct {
	// duration is from its start (the leader's kill for a takeover) until
	// every host was reconciled once, its queues were empty and every
	// template's status was correct.
	duration time.Duration
	// calls are its requests from then until cfg.steady after it caught up.
	calls map[apiCall]int
	// reconciles are its host reconciles when it caught up.
	reconciles float64
	// memory is read cfg.steady after it caught up.
	memory managerMemory
}

// restartPhase lets a manager set up the fleet, then measures a fresh
// manager's catch-up, then a leader change between two managers.
func (b *bench) restartPhase(ctx context.Context) (err error) {
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	registered, err := b.registerFleet(phaseCtx, controllerNamespace, "", &b.result.controller)
	if err != nil {
		return err
	}
	if err = b.setUpFleet(ctx, registered); err != nil {
		return err
	}

	progressf("run %d: restart: a fresh manager on the set-up fleet", b.result.run)
	start := time.Now()
	fresh, err := b.startSampledManager(ctx, "manager-restarted")
	if err != nil {
		return err
	}
	b.result.restart.restart, err = b.measureCatchUp(ctx, fresh, start)
	if err = errors.Join(err, fresh.Stop()); err != nil {
		return err
	}

	progressf("run %d: leader change: two managers, the leader killed", b.result.run)
	start = time.Now()
	leader, err := b.startSampledManager(ctx, "manager-leader", b.leaderElection()...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, leader.Stop()) }()
	if _, err = b.waitForCatchUp(ctx, leader, start); err != nil {
		return fmt.Errorf("the first leader: %w", err)
	}
	standby, err := b.startSampledManager(ctx, "manager-standby", b.leaderElection()...)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, standby.Stop()) }()
	// The standby's caches fill while it waits for the Lease, as in a
	// Deployment with two replicas.
	if err = sleepUntil(ctx, time.Now().Add(settle)); err != nil {
		return err
	}
	killed := time.Now()
	if err = leader.Kill(); err != nil {
		return err
	}
	b.result.restart.takeover, err = b.measureCatchUp(ctx, standby, killed)
	return err
}

// setUpFleet runs a manager until every host is done and every template's
// status says so, and stops it once it is quiet.
func (b *bench) setUpFleet(ctx context.Context, registered registeredFleet) (err error) {
	progressf("run %d: a manager sets up the fleet", b.result.run)
	manager, err := b.startSampledManager(ctx, "manager-setup")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, manager.Stop()) }()
	lastDone, err := waitForHosts(ctx, "set-up", registered.tracker, manager.running)
	if err != nil {
		return err
	}
	b.result.restart.setup = lastDone.Sub(registered.start)
	if _, err = b.waitForCatchUp(ctx, manager, registered.start); err != nil {
		return err
	}
	if _, err = b.waitForQuiet(ctx, manager); err != nil {
		return err
	}
	if err = b.recordManager(ctx, manager); err != nil {
		return err
	}
	return manager.Stop()
}

// leaderElection are the flags of the leader change's two managers.
func (b *bench) leaderElection() []string {
	return []string{"--leader-elect", "--leader-election-id=" + leaderElectionID, "--leader-election-namespace=" + controllerNamespace}
}

func (b *bench) startManager(name string, extraArgs ...string) (*managerProcess, error) {
	return startManager(name, b.cfg.manager, b.dir, b.cp.managerKubeConfig, b.cfg.limits, b.cfg.env,
		append(b.cfg.managerArgs(), extraArgs...)...)
}

// startSampledManager starts a manager and samples its memory each second
// until ctx ends.
func (b *bench) startSampledManager(ctx context.Context, name string, extraArgs ...string) (*managerProcess, error) {
	manager, err := b.startManager(name, extraArgs...)
	if err == nil {
		go manager.sampleRuntime(ctx, time.Second)
	}
	return manager, err
}

// measureCatchUp waits until the manager has caught up, counts its requests
// from start until cfg.steady later, and reads its memory.
func (b *bench) measureCatchUp(ctx context.Context, manager *managerProcess, start time.Time) (catchUp, error) {
	reconciles, err := b.waitForCatchUp(ctx, manager, start)
	if err != nil {
		return catchUp{}, err
	}
	caughtUp := time.Now()
	progressf("run %d: %s caught up after %s; counting its requests for %s more",
		b.result.run, manager.Name, caughtUp.Sub(start).Round(time.Millisecond), b.cfg.steady)
	if err = sleepUntil(ctx, caughtUp.Add(b.cfg.steady)); err != nil {
		return catchUp{}, err
	}
	memory, _, err := b.readManager(ctx, manager)
	if err != nil {
		return catchUp{}, err
	}
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return catchUp{}, err
	}
	return catchUp{
		duration:   caughtUp.Sub(start),
		calls:      auditWindow{user: managerUser, from: start, to: caughtUp.Add(b.cfg.steady)}.count(events),
		reconciles: reconciles,
		memory:     memory,
	}, nil
}

// waitForCatchUp polls the manager's metrics until its host controller has
// reconciled every host at least once and, like the template controller,
// has nothing queued or in progress, and then the templates' status until
// it is correct. It returns the host reconciles then.
func (b *bench) waitForCatchUp(ctx context.Context, manager *managerProcess, start time.Time) (float64, error) {
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	lastSaid := time.Now()
	for {
		if err := manager.running(); err != nil {
			return 0, err
		}
		sample, err := manager.Metrics(ctx)
		if err != nil {
			// The manager is ready before its metrics endpoint listens, by
			// a moment on a loaded machine: poll again until it exits or
			// ctx ends.
			if ctx.Err() != nil {
				return 0, errors.Join(ctx.Err(), err)
			}
			if time.Since(lastSaid) >= 10*time.Second {
				progressf("run %d: %s: %v", b.result.run, manager.Name, err)
				lastSaid = time.Now()
			}
			<-ticker.C
			continue
		}
		reconciles := sample.SumBy("controller_runtime_reconcile_total", "controller")
		if reconciles[hostController] >= float64(b.cfg.hosts) && reconciles[templateController] >= racks && idle(sample) {
			problem, err := b.templatesProblem(ctx)
			if err != nil {
				return 0, err
			}
			if problem == "" {
				return reconciles[hostController], nil
			}
			if time.Since(lastSaid) >= 10*time.Second {
				progressf("run %d: %s: %s", b.result.run, manager.Name, problem)
				lastSaid = time.Now()
			}
		} else if time.Since(lastSaid) >= 10*time.Second {
			progressf("run %d: %s: %.0f of %d hosts reconciled after %s", b.result.run, manager.Name,
				reconciles[hostController], b.cfg.hosts, time.Since(start).Round(time.Second))
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for %s to catch up: %w", manager.Name, ctx.Err())
		case <-ticker.C:
		}
	}
}

// idle says whether the host and template controllers have nothing queued
// and no reconcile in progress.
func idle(sample framework.Metrics) bool {
	depth := sample.SumBy("workqueue_depth", "name")
	active := sample.SumBy("controller_runtime_active_workers", "controller")
	for _, controller := range []string{hostController, templateController} {
		if depth[controller] != 0 || active[controller] != 0 {
			return false
		}
	}
	return true
}

// templatesProblem says what is not yet right in the templates' status, ""
// when each counts exactly its rack's hosts, all ready, for its generation.
func (b *bench) templatesProblem(ctx context.Context) (string, error) {
	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := b.cp.Client.List(ctx, templates, client.InNamespace(controllerNamespace)); err != nil {
		return "", err
	}
	if len(templates.Items) != racks {
		return "", fmt.Errorf("%d Metal3PreprovisioningTemplates in %s, want %d", len(templates.Items), controllerNamespace, racks)
	}
	for r := range racks {
		want := int32(b.hostsInRack(r))
		for _, t := range templates.Items {
			if t.Name != "rack-"+rackOf(r) {
				continue
			}
			s := t.Status
			got := []int32{
				ptr.Deref(s.MatchedHosts, 0), ptr.Deref(s.ReadyHosts, 0), ptr.Deref(s.WaitingHosts, 0), ptr.Deref(s.FailedHosts, 0),
				ptr.Deref(s.ConflictingHosts, 0), ptr.Deref(s.OrphanedHosts, 0),
			}
			if s.ObservedGeneration != t.Generation || got[0] != want || got[1] != want || got[2]+got[3]+got[4]+got[5] != 0 {
				return fmt.Sprintf("template %s: generation %d observed %d, matched/ready/waiting/failed/conflicting/orphaned %v, want %d ready",
					t.Name, t.Generation, s.ObservedGeneration, got, want), nil
			}
		}
	}
	return "", nil
}

// hostsInRack counts the hosts of rack r: host i is in rack i % racks.
func (b *bench) hostsInRack(r int) int {
	n := b.cfg.hosts / racks
	if r < b.cfg.hosts%racks {
		n++
	}
	return n
}
