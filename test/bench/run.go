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
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// Namespaces of a run: the controller's fleet and the floor's, the same
// objects in both.
const (
	controllerNamespace = "bench-controller"
	floorNamespace      = "bench-floor"
)

// settle is how long after the last host is done the steady window starts:
// events are sent asynchronously, the last hosts' may still be in flight.
const settle = 5 * time.Second

// bench is one run: a fresh control plane, the controller's phase, then the
// floor's.
type bench struct {
	cfg    config
	cp     *controlPlane
	dir    string
	result runResult
}

func runOnce(ctx context.Context, cfg config, run int) (runResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "capm3-preprov-bench-")
	if err != nil {
		return runResult{}, "", err
	}
	b := &bench{cfg: cfg, dir: dir, result: runResult{run: run, loadAverage: loadAverage()}}
	err = b.run(ctx)
	if err != nil {
		return runResult{}, "", fmt.Errorf("run %d (files kept in %s): %w", run, dir, err)
	}
	return b.result, b.cp.version, os.RemoveAll(dir)
}

func (b *bench) run(ctx context.Context) (err error) {
	progressf("run %d: starting a control plane", b.result.run)
	if b.cp, err = startControlPlane(filepath.Join(b.dir, "audit.log"), b.cfg.limits, b.cfg.scenario == scenarioDelete || b.cfg.scenario == scenarioHerd); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.cp.Stop()) }()
	standIn, err := framework.StartIPAMStandIn(b.cp.Config)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, standIn.Stop()) }()
	if b.cfg.clusterAPIPools {
		clusterAPIStandIn, startErr := framework.StartCAPIIPAMStandIn(b.cp.Config)
		if startErr != nil {
			return startErr
		}
		defer func() { err = errors.Join(err, clusterAPIStandIn.Stop()) }()
	}

	// The restart, handoff and herd scenarios have no floor: they measure a
	// manager on a fleet that is set up already. The delete scenario's
	// floor is the same deletes with no manager.
	switch b.cfg.scenario {
	case scenarioRestart:
		err = b.restartPhase(ctx)
	case scenarioHandoff:
		err = b.handoffPhase(ctx)
	case scenarioDelete:
		err = b.deletePhase(ctx)
	case scenarioHerd:
		err = b.herdPhase(ctx)
	case scenarioShard:
		if err = b.shardPhase(ctx); err == nil {
			err = b.floorPhase(ctx)
		}
	case scenarioPlain:
		if err = b.controllerPhase(ctx); err == nil && b.cfg.hasFloor() {
			err = b.floorPhase(ctx)
		}
	default:
		if err = b.controllerPhase(ctx); err == nil {
			err = b.floorPhase(ctx)
		}
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

// waitForHosts waits until the tracker has seen every host done, saying how
// far it got every 10 s, and stops early when alive reports a failure.
func waitForHosts(ctx context.Context, phase string, hosts *tracker, alive func() error) (time.Time, error) {
	start := time.Now()
	ticker := time.NewTicker(10 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-hosts.allDone:
			return hosts.wait(ctx)
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s: %d of %d hosts done when the run was stopped: %w",
				phase, hosts.progress(), hosts.expected, ctx.Err())
		case <-ticker.C:
			if err := alive(); err != nil {
				return time.Time{}, err
			}
			progressf("%s: %d/%d hosts done after %s", phase, hosts.progress(), hosts.expected, time.Since(start).Round(time.Second))
		}
	}
}

func latencies(started []time.Time, done map[string]time.Time) []time.Duration {
	durations := make([]time.Duration, 0, len(started))
	for i, at := range started {
		durations = append(durations, done[hostName(i)].Sub(at))
	}
	return durations
}

func sleepUntil(ctx context.Context, deadline time.Time) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "?"
	}
	return strings.Join(fields[:3], " ")
}

func progressf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format(time.TimeOnly)+" "+format+"\n", args...)
}

// registeredFleet is a fleet whose hosts are created and watched.
type registeredFleet struct {
	fleet   fleet
	tracker *tracker
	hosts   []*bmov1alpha1.BareMetalHost
	// start is when the first host's creation started, started when each
	// host's did.
	start   time.Time
	started []time.Time
}

// registerFleet creates the fleet in namespace (pools, templates, then the
// hosts, which it watches until ctx ends) and records in phase how long the
// hosts' creation took.
func (b *bench) registerFleet(ctx context.Context, namespace, purpose string, phase *phaseResult) (registeredFleet, error) {
	f := fleet{
		namespace: namespace, hosts: b.cfg.hosts,
		hardware: b.cfg.scenario == scenarioHardware, preprovisioning: b.cfg.scenario == scenarioRestart,
		sharded: b.cfg.scenario == scenarioShard, clusterAPI: b.cfg.clusterAPIPools,
	}
	if err := f.createTemplates(ctx, b.cp.Client); err != nil {
		return registeredFleet{}, err
	}
	hostTracker, err := startTracker(ctx, b.cp.Config, f.namespace, f.hosts)
	if err != nil {
		return registeredFleet{}, err
	}
	progressf("run %d: registering %d hosts (%s) in %s%s", b.result.run, f.hosts, b.cfg.scenario, f.namespace, purpose)
	start := time.Now()
	hosts, started, err := f.createHosts(ctx, b.cp.Client)
	if err != nil {
		return registeredFleet{}, err
	}
	phase.creating = time.Since(start)
	return registeredFleet{fleet: f, tracker: hostTracker, hosts: hosts, start: start, started: started}, nil
}

// done records a phase whose last host was done at lastDone, its processing
// having started at processingFrom.
func (r registeredFleet) done(phase *phaseResult, processingFrom, lastDone time.Time, cpu *cpuMeter) {
	phase.cpu = cpu.used()
	phase.processing = lastDone.Sub(processingFrom)
	phase.wall = lastDone.Sub(r.start)
	doneAt := r.tracker.doneAt()
	phase.latencies = latencies(r.started, doneAt)
	phase.shardWall = map[string]time.Duration{}
	for i := range r.hosts {
		shard := r.fleet.shardOf(i)
		phase.shardWall[shard] = max(phase.shardWall[shard], doneAt[hostName(i)].Sub(r.start))
	}
}
