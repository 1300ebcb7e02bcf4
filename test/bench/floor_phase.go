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
	"fmt"
	"os"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// floorPhase registers the same fleet in its own namespace and does its
// object writes with the floor, the manager stopped: a floor per shard, in
// parallel, each with a client of its own as each shard has a manager.
func (b *bench) floorPhase(ctx context.Context) error {
	// The fleet's hosts are watched until this phase ends.
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	registered, err := b.registerFleet(phaseCtx, floorNamespace, " for the floor", &b.result.floor)
	if err != nil {
		return err
	}

	floorStart := time.Now()
	shards := registered.fleet.shards()
	workers := make([]*floor, len(shards))
	for i, shard := range shards {
		if workers[i], err = newFloor(b.cp.floorConfig, registered.fleet, registered.hosts, shard); err != nil {
			return err
		}
	}
	pids := b.cp.pids()
	pids["harness"] = os.Getpid()
	cpu := startCPUMeter(pids)
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	failed := make(chan error, len(workers))
	for _, worker := range workers {
		go func() {
			if runErr := worker.run(workCtx, b.cp.floorConfig, floorNamespace, b.cfg.limits.concurrency); runErr != nil {
				failed <- runErr
			}
		}()
	}
	workFailed := func() error {
		select {
		case failure := <-failed:
			return fmt.Errorf("the floor stopped: %w", failure)
		default:
			return nil
		}
	}
	lastDone, err := waitForHosts(ctx, "floor", registered.tracker, workFailed)
	if err != nil {
		return err
	}
	registered.done(&b.result.floor, floorStart, lastDone, cpu)

	// The API server writes an audit event once the response is sent, so
	// the last host's patch can be seen done before its event is logged.
	if err = sleepUntil(ctx, lastDone.Add(settle)); err != nil {
		return err
	}
	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	b.result.floorCalls = auditWindow{user: floorUser, namespace: floorNamespace, from: floorStart, to: time.Now()}.count(events)
	return nil
}
