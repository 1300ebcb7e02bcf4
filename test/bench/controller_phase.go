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
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// controllerPhase registers the fleet, runs the manager until every host is
// done, through the steady window and until it is quiet, and records what it
// did.
func (b *bench) controllerPhase(ctx context.Context) (err error) {
	// The fleet's hosts are watched until this phase ends.
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	registered, err := b.registerFleet(phaseCtx, controllerNamespace, "", &b.result.controller)
	if err != nil {
		return err
	}

	progressf("run %d: starting %s", b.result.run, b.cfg.manager)
	managerStart := time.Now()
	manager, err := b.startManager("manager")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, manager.Stop()) }()
	samplingCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go manager.sampleRuntime(samplingCtx, time.Second)
	pids := b.cp.pids()
	pids["manager"], pids["harness"] = manager.PID(), os.Getpid()
	cpu := startCPUMeter(pids)

	lastDone, err := waitForHosts(ctx, "controller", registered.tracker, manager.running)
	if err != nil {
		return err
	}
	registered.done(&b.result.controller, managerStart, lastDone, cpu)

	steadyFrom := lastDone.Add(settle)
	steadyTo := steadyFrom.Add(b.cfg.steady)
	progressf("run %d: every host is done; steady state until %s", b.result.run, steadyTo.Format(time.TimeOnly))
	if err = sleepUntil(ctx, steadyTo); err != nil {
		return err
	}
	quietAt, err := b.waitForQuiet(ctx, manager)
	if err != nil {
		return err
	}
	if err := b.recordManager(ctx, manager); err != nil {
		return err
	}
	if err := manager.Stop(); err != nil {
		return err
	}
	return b.recordManagerCalls(managerStart, lastDone, steadyFrom, steadyTo, quietAt)
}

// waitForQuiet returns when the manager's client has sent no write for
// cfg.quiet, judged from its request counter: the requests per host then
// count everything the fleet caused, late events included.
func (b *bench) waitForQuiet(ctx context.Context, manager *managerProcess) (time.Time, error) {
	lastCount, lastChange, lastSaid := -1.0, time.Now(), time.Now()
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		if err := manager.running(); err != nil {
			return time.Time{}, err
		}
		sample, err := manager.Metrics(ctx)
		if err != nil {
			return time.Time{}, errors.Join(ctx.Err(), err)
		}
		if count := writeRequests(sample); count != lastCount {
			lastCount, lastChange = count, time.Now()
		}
		if time.Since(lastChange) >= b.cfg.quiet {
			return lastChange, nil
		}
		if time.Since(lastSaid) >= 30*time.Second {
			progressf("run %d: the manager still writes (%.0f writes so far); waiting until it is quiet for %s",
				b.result.run, lastCount, b.cfg.quiet)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for the manager to stop writing: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

// writeRequests counts the requests of the manager's client that write.
func writeRequests(m framework.Metrics) float64 {
	total := 0.0
	for key, n := range m.SumBy("rest_client_requests_total", "method") {
		switch key {
		case "POST", "PUT", "PATCH", "DELETE":
			total += n
		}
	}
	return total
}

// recordManager reads the manager's memory and metrics while it still runs.
func (b *bench) recordManager(ctx context.Context, manager *managerProcess) (err error) {
	b.result.memory, b.result.manager, err = b.readManager(ctx, manager)
	return err
}

// readManager reads a running manager's memory and metrics, and with
// -heap-profiles saves its heap profile.
func (b *bench) readManager(ctx context.Context, manager *managerProcess) (managerMemory, managerStats, error) {
	peakRSS, endRSS, err := manager.memory()
	if err != nil {
		return managerMemory{}, managerStats{}, err
	}
	if b.cfg.heapProfiles != "" {
		path := filepath.Join(b.cfg.heapProfiles, fmt.Sprintf("run%d-%s.heap.pb.gz", b.result.run, manager.Name))
		if err = manager.saveHeapProfile(ctx, path); err != nil {
			return managerMemory{}, managerStats{}, err
		}
		progressf("run %d: %s's heap profile: %s", b.result.run, manager.Name, path)
	}
	final, err := manager.Metrics(ctx)
	if err != nil {
		return managerMemory{}, managerStats{}, err
	}
	peak := manager.runtimePeak()
	memory := managerMemory{
		peakRSS: peakRSS, endRSS: endRSS, peakAnonRSS: peak.anonRSS, peakFileRSS: peak.fileRSS,
		peakHeapAlloc: peak.heapAlloc, peakHeapInuse: peak.heapInuse, peakGoroutines: peak.goroutines,
		endHeapAlloc: final.Sum("go_memstats_heap_alloc_bytes"), endHeapInuse: final.Sum("go_memstats_heap_inuse_bytes"),
	}
	stats := managerStats{
		cpuSeconds:       final.Sum("process_cpu_seconds_total"),
		reconciles:       final.SumBy("controller_runtime_reconcile_total", "controller"),
		reconcileErrors:  final.SumBy("controller_runtime_reconcile_errors_total", "controller"),
		reconcileSeconds: final.SumBy("controller_runtime_reconcile_time_seconds_sum", "controller"),
		requests:         final.SumBy("rest_client_requests_total", "method", "code"),
	}
	return memory, stats, nil
}

// recordManagerCalls counts the manager's requests from the audit log.
func (b *bench) recordManagerCalls(managerStart, lastDone, steadyFrom, steadyTo, quietAt time.Time) error {
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.managerCalls = auditWindow{user: managerUser, namespace: controllerNamespace, from: managerStart, to: quietAt.Add(time.Second)}.count(events)
	b.result.steadyCalls = auditWindow{user: managerUser, from: steadyFrom, to: steadyTo}.count(events)
	for _, event := range events {
		if event.User.Username == managerUser && (apiCall{Verb: event.Verb}).write() {
			b.result.lastWrite = max(b.result.lastWrite, event.RequestReceived.Sub(lastDone))
		}
	}
	return nil
}
