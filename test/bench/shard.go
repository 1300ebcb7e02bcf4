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
	"maps"
	"net/url"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// shardUser is the identity of a shard's manager, so the audit log tells the
// two managers apart.
func shardUser(shard string) string { return managerUser + "-" + shard }

// shardLease is the Lease of a shard's manager.
func shardLease(shard string) string { return "capm3-preprov-" + shard }

// shardManager is what one shard's manager did in a run.
type shardManager struct {
	// hosts is how many hosts its shard has.
	hosts   int
	memory  managerMemory
	manager managerStats
	// calls are its requests in the fleet's namespace from its start until
	// the steady window; steadyCalls those in the steady window, in any
	// namespace.
	calls, steadyCalls map[apiCall]int
	// wrongShard are its requests, over the whole run, that name an object
	// of the other shard; unscopedLists its lists and watches whose label
	// selector is not its watch filter.
	wrongShard, unscopedLists map[apiCall]int
	// unscopedQueries are the distinct queries of the unscoped lists and
	// watches, as "verb request-URI", to see what they asked for.
	unscopedQueries map[string]bool
	// listsChecked is how many lists and watches it made.
	listsChecked int
	// ownSecrets and ownClaims are how many of its hosts' Secrets and
	// IPClaims it wrote itself.
	ownSecrets, ownClaims int
}

// shardPhase registers the sharded fleet, starts one manager per shard
// together, each with its own identity, watch filter and Lease, runs them
// until every host of both shards is done and through the steady window, and
// records what each did and whether it touched the other shard.
func (b *bench) shardPhase(ctx context.Context) (err error) {
	// The fleet's hosts are watched until this phase ends.
	phaseCtx, endPhase := context.WithCancel(ctx)
	defer endPhase()
	registered, err := b.registerFleet(phaseCtx, controllerNamespace, "", &b.result.controller)
	if err != nil {
		return err
	}
	kubeConfigs := map[string][]byte{}
	for _, shard := range shardNames {
		if _, kubeConfigs[shard], err = b.cp.AddUser(shardUser(shard)); err != nil {
			return err
		}
	}

	progressf("run %d: starting %s for each of %v", b.result.run, b.cfg.manager, shardNames)
	managers := map[string]*managerProcess{}
	defer func() {
		for _, manager := range managers {
			err = errors.Join(err, manager.Stop())
		}
	}()
	managerStart := time.Now()
	for _, shard := range shardNames {
		var manager *managerProcess
		manager, err = startManager("manager-"+shard, b.cfg.manager, b.dir, kubeConfigs[shard], b.cfg.limits, b.cfg.env,
			"--watch-filter="+shard, "--leader-elect", "--leader-election-id="+shardLease(shard),
			"--leader-election-namespace="+controllerNamespace)
		if err != nil {
			return err
		}
		managers[shard] = manager
	}
	samplingCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	pids := b.cp.pids()
	pids["harness"] = os.Getpid()
	for _, manager := range managers {
		go manager.sampleRuntime(samplingCtx, time.Second)
		pids[manager.Name] = manager.PID()
	}
	cpu := startCPUMeter(pids)
	running := func() error {
		for _, manager := range managers {
			if exited := manager.running(); exited != nil {
				return exited
			}
		}
		return nil
	}

	lastDone, err := waitForHosts(ctx, "controller", registered.tracker, running)
	if err != nil {
		return err
	}
	registered.done(&b.result.controller, managerStart, lastDone, cpu)

	steadyFrom := lastDone.Add(settle)
	steadyTo := steadyFrom.Add(b.cfg.steady)
	progressf("run %d: every host of both shards is done; steady state until %s", b.result.run, steadyTo.Format(time.TimeOnly))
	if err = sleepUntil(ctx, steadyTo); err != nil {
		return err
	}
	if err = running(); err != nil {
		return err
	}
	b.result.shards = map[string]shardManager{}
	for shard, manager := range managers {
		result := shardManager{hosts: len(registered.fleet.shardHosts(shard))}
		if result.memory, result.manager, err = b.readManager(ctx, manager); err != nil {
			return err
		}
		b.result.shards[shard] = result
	}
	for _, manager := range managers {
		if err = manager.Stop(); err != nil {
			return err
		}
	}

	events, err := framework.ReadAuditLog(b.cp.auditLog)
	if err != nil {
		return err
	}
	for shard, result := range b.result.shards {
		user := shardUser(shard)
		result.calls = withoutWatches(auditWindow{user: user, namespace: controllerNamespace, from: managerStart, to: steadyFrom}.count(events))
		result.steadyCalls = withoutWatches(auditWindow{user: user, from: steadyFrom, to: steadyTo}.count(events))
		result.checkShard(registered.fleet, shard, events)
		b.result.shards[shard] = result
		if n := result.outsideShard(); n > 0 {
			progressf("run %d: WRONG SHARD: the manager of %s made %d requests outside its shard (see the report)", b.result.run, shard, n)
		}
	}
	return nil
}

func everyCall(apiCall) bool { return true }

// outsideShard counts a manager's requests that named the other shard's
// objects or listed or watched beyond its own.
func (m shardManager) outsideShard() int {
	return sumCalls(m.wrongShard, everyCall) + sumCalls(m.unscopedLists, everyCall)
}

// withoutWatches leaves out the watches, recorded for the selector check
// only, so the requests compare with the plain scenario's.
func withoutWatches(calls map[apiCall]int) map[apiCall]int {
	maps.DeleteFunc(calls, func(call apiCall, _ int) bool { return call.Verb == "watch" })
	return calls
}

// checkShard goes through every request of the shard's manager in the audit
// log: those naming an object of another shard, lists and watches not
// limited to its shard, and which of its hosts' Secrets and claims it wrote.
func (m *shardManager) checkShard(f fleet, shard string, events []framework.AuditEvent) {
	m.wrongShard, m.unscopedLists, m.unscopedQueries = map[apiCall]int{}, map[apiCall]int{}, map[string]bool{}
	secrets, claims := map[string]bool{}, map[string]bool{}
	for _, event := range events {
		if event.User.Username != shardUser(shard) || event.ObjectRef == nil {
			continue
		}
		failed := event.ResponseStatus != nil && event.ResponseStatus.Code >= 300
		call := apiCall{Verb: event.Verb, Resource: event.Resource(), Failed: failed}
		if event.Verb == "list" || event.Verb == "watch" {
			m.listsChecked++
			if !listsShard(event.RequestURI, shard) {
				m.unscopedLists[call]++
				m.unscopedQueries[event.Verb+" "+event.RequestURI] = true
			}
		}
		name := event.ObjectRef.Name
		if name == "" {
			continue
		}
		owner := f.shardOfObject(event.ObjectRef.Resource, name)
		if owner != "" && owner != shard {
			m.wrongShard[call]++
			continue
		}
		if owner != shard || !call.write() || failed || event.ObjectRef.Namespace != controllerNamespace {
			continue
		}
		switch event.ObjectRef.Resource {
		case "secrets":
			secrets[name] = true
		case "ipclaims":
			claims[name] = true
		}
	}
	m.ownSecrets, m.ownClaims = len(secrets), len(claims)
}

// listsShard says whether a list's or watch's label selector, in its request
// URI, asks for the shard's watch-filter label and no other value.
func listsShard(requestURI, shard string) bool {
	uri, err := url.Parse(requestURI)
	if err != nil {
		return false
	}
	selector, err := labels.Parse(uri.Query().Get("labelSelector"))
	if err != nil {
		return false
	}
	requirements, _ := selector.Requirements()
	for _, requirement := range requirements {
		if requirement.Key() != clusterv1.WatchLabel {
			continue
		}
		switch requirement.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			values := requirement.Values()
			return values.Len() == 1 && values.Has(shard)
		}
	}
	return false
}
