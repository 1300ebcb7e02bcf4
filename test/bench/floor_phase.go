package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/audit"
)

// floorPhase registers the same fleet in its own namespace and does its
// object writes with the floor, the manager stopped.
func (b *bench) floorPhase(ctx context.Context) error {
	f := fleet{namespace: floorNamespace, hosts: b.cfg.hosts, hardware: b.cfg.scenario == scenarioHardware}
	if err := f.createTemplates(ctx, b.cp.admin); err != nil {
		return err
	}
	trackCtx, stopTracking := context.WithCancel(ctx)
	defer stopTracking()
	hostTracker, err := startTracker(trackCtx, b.cp.adminConfig, f.namespace, f.hosts)
	if err != nil {
		return err
	}
	progressf("run %d: registering %d hosts (%s) in %s for the floor", b.result.run, f.hosts, b.cfg.scenario, f.namespace)
	start := time.Now()
	hosts, started, err := f.createHosts(ctx, b.cp.admin)
	if err != nil {
		return err
	}
	b.result.floor.creating = time.Since(start)

	floorStart := time.Now()
	worker, err := newFloor(b.cp.floorConfig, hosts)
	if err != nil {
		return err
	}
	pids := b.cp.pids()
	pids["harness"] = os.Getpid()
	cpu := startCPUMeter(pids)
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	failed := make(chan error, 1)
	go func() {
		if err := worker.run(workCtx, b.cp.floorConfig, f.namespace, b.cfg.limits.concurrency); err != nil {
			failed <- err
		}
	}()
	workFailed := func() error {
		select {
		case err := <-failed:
			return fmt.Errorf("the floor stopped: %w", err)
		default:
			return nil
		}
	}
	lastDone, err := waitForHosts(ctx, "floor", hostTracker, workFailed)
	if err != nil {
		return err
	}
	b.result.floor.cpu = cpu.used()
	b.result.floor.processing = lastDone.Sub(floorStart)
	b.result.floor.wall = lastDone.Sub(start)
	b.result.floor.latencies = latencies(started, hostTracker.doneAt())

	events, err := audit.Read(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.floorCalls = auditWindow{user: floorUser, namespace: floorNamespace, from: floorStart, to: time.Now()}.count(events)
	return nil
}
