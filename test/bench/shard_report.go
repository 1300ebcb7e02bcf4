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
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// goalShardHosts is the fleet the issue splits between two managers, each
// under goalRSSMiB.
const goalShardHosts = 10000

// hostWrites are the writes that are neither events nor Lease renewals.
func hostWrites(calls map[apiCall]int) int { return objectWrites(calls) - leaseWrites(calls) }

// shardColumn collects one number of a shard's manager per run.
func (r report) shardColumn(shard string, value func(shardManager) float64) spread {
	return r.column(func(run runResult) float64 { return value(run.shards[shard]) })
}

// worstShard is the largest of a statistic over the shards' managers.
func (r report) worstShard(value func(shardManager) float64, statistic func(spread) float64) float64 {
	worst := 0.0
	for _, shard := range shardNames {
		worst = max(worst, statistic(r.shardColumn(shard, value)))
	}
	return worst
}

// worstRunTotal is the largest, over the runs, of a count summed over both
// shards' managers.
func (r report) worstRunTotal(count func(shardManager) int) float64 {
	return r.column(func(run runResult) float64 {
		total := 0
		for _, m := range run.shards {
			total += count(m)
		}
		return float64(total)
	}).max
}

func median(s spread) float64  { return s.median }
func maximum(s spread) float64 { return s.max }

// perShardHost divides by the number of hosts of the manager's shard.
func perShardHost(m shardManager, count int) float64 {
	return float64(count) / float64(max(m.hosts, 1))
}

func (r report) shardSections() []section {
	sections := []section{r.machine.section(), r.shardGoals(), r.shardSummary(), r.outsideShards()}
	for _, shard := range shardNames {
		sections = append(sections,
			r.callCounts("Requests of the manager of "+shard+", by verb and resource, from its start until the steady window",
				func(run runResult) map[apiCall]int { return run.shards[shard].calls }),
			r.callCounts("Requests of the manager of "+shard+" in the steady window ("+r.cfg.steady.String()+", starting "+
				settle.String()+" after the last host of both shards was done)",
				func(run runResult) map[apiCall]int { return run.shards[shard].steadyCalls }))
	}
	return append(sections,
		r.callsPerHost("Floor requests per host, both floors (check: the floors do exactly the minimum)",
			func(run runResult) map[apiCall]int { return run.floorCalls }),
		r.cpu(), r.shardHowToRepeat())
}

func (r report) shardGoals() section {
	s := section{title: "Goals", table: table{header: []string{"goal", "measured", "met"}}}
	ratio := r.column(wallRatio).median
	s.table.add(fmt.Sprintf("wall time of both managers within %.1fx of the two floors (median run)", goalRatio),
		fmt.Sprintf("%.2fx", ratio), yesNo(ratio <= goalRatio))
	rss := r.worstShard(func(m shardManager) float64 { return m.memory.peakRSS }, median) / mib
	rssGoal := fmt.Sprintf("each manager's peak RSS under %d MiB at %d hosts split in two (median run, larger manager)", goalRSSMiB, goalShardHosts)
	if r.cfg.hosts == goalShardHosts {
		s.table.add(rssGoal, fmt.Sprintf("%.0f MiB", rss), yesNo(rss < goalRSSMiB))
	} else {
		s.table.add(rssGoal, fmt.Sprintf("%.0f MiB at %d hosts", rss, r.cfg.hosts), "not measured here")
	}
	wrong := r.worstRunTotal(func(m shardManager) int { return sumCalls(m.wrongShard, everyCall) })
	s.table.add("no request of a manager names an object of the other shard (worst run, both managers)",
		fmt.Sprintf("%.0f", wrong), yesNo(wrong == 0))
	unscoped := r.worstRunTotal(func(m shardManager) int { return sumCalls(m.unscopedLists, everyCall) })
	s.table.add("every list and watch of a manager selects its own shard's watch-filter label (those without it, worst run)",
		fmt.Sprintf("%.0f", unscoped), yesNo(unscoped == 0))
	secrets := r.worstShard(func(m shardManager) float64 { return float64(m.hosts - m.ownSecrets) }, maximum)
	claims := r.worstShard(func(m shardManager) float64 { return float64(m.hosts*len(pools) - m.ownClaims) }, maximum)
	s.table.add("every host's Secret and claims written by its own shard's manager (missing, worst run and shard)",
		fmt.Sprintf("%.0f Secrets, %.0f claims", secrets, claims), yesNo(secrets == 0 && claims == 0))
	steady := r.worstShard(func(m shardManager) float64 { return float64(allWrites(m.steadyCalls) - leaseWrites(m.steadyCalls)) }, maximum)
	s.table.add(fmt.Sprintf("zero writes but Lease renewals in %s of steady state (worst run and manager)", r.cfg.steady),
		fmt.Sprintf("%.0f", steady), yesNo(steady == 0))
	minWrites := len(pools) + 2
	writes := r.worstShard(func(m shardManager) float64 { return perShardHost(m, hostWrites(m.calls)) }, maximum)
	s.table.add(fmt.Sprintf("object writes per host of its shard at the minimum (%d: a claim per pool, the Secret, the patch; "+
		"Leases aside; worst run and manager)", minWrites), fmt.Sprintf("%.4f", writes), yesNo(writes <= float64(minWrites)))
	if wrong+unscoped > 0 {
		s.notes = append(s.notes, fmt.Sprintf("**A MANAGER LEFT ITS SHARD**: %.0f requests named the other shard's objects and "+
			"%.0f lists and watches were not limited to the manager's shard in the worst run; see \"Requests outside the shard\".", wrong, unscoped))
	}
	return s
}

func (r report) shardSummary() section {
	s := r.newSummary(
		"Wall time: from the start of the hosts' creation to the last host of both shards unpaused with its Secret; " +
			"a shard's: to its last host. Processing: from the managers' (the floors') start to the last host done. " +
			"Per host: from the start of its creation to done, seen by a watch in the harness. " +
			"A manager's writes per host divide by its shard's hosts; its requests count until the steady window.")
	row := r.summaryRows(&s)
	row("controller wall time, both shards (s)", "%.1f", func(run runResult) float64 { return seconds(run.controller.wall) })
	row("floor wall time, both shards (s)", "%.1f", func(run runResult) float64 { return seconds(run.floor.wall) })
	row("ratio controller / floor, wall", "%.2f", wallRatio)
	for _, shard := range shardNames {
		row(shard+": controller wall time (s)", "%.1f", func(run runResult) float64 { return seconds(run.controller.shardWall[shard]) })
		row(shard+": floor wall time (s)", "%.1f", func(run runResult) float64 { return seconds(run.floor.shardWall[shard]) })
	}
	row("host creation (s), controller phase", "%.1f", func(run runResult) float64 { return seconds(run.controller.creating) })
	row("controller processing (s)", "%.1f", func(run runResult) float64 { return seconds(run.controller.processing) })
	row("floor processing (s)", "%.1f", func(run runResult) float64 { return seconds(run.floor.processing) })
	row("ratio controller / floor, processing", "%.2f", processingRatio)
	row("controller per host p50 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.controller.latencies, 50)) })
	row("controller per host p99 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.controller.latencies, 99)) })
	for _, shard := range shardNames {
		manager := func(value func(shardManager) float64) func(runResult) float64 {
			return func(run runResult) float64 { return value(run.shards[shard]) }
		}
		name := "manager of " + shard + ": "
		row(name+"peak RSS, VmHWM (MiB)", "%.0f", manager(func(m shardManager) float64 { return m.memory.peakRSS / mib }))
		row(name+"RSS at the end (MiB)", "%.0f", manager(func(m shardManager) float64 { return m.memory.endRSS / mib }))
		row(name+"peak heap alloc (MiB)", "%.0f", manager(func(m shardManager) float64 { return m.memory.peakHeapAlloc / mib }))
		row(name+"peak heap in use (MiB)", "%.0f", manager(func(m shardManager) float64 { return m.memory.peakHeapInuse / mib }))
		row(name+"CPU while processing (s)", "%.1f", func(run runResult) float64 { return run.controller.cpu["manager-"+shard] })
		row(name+"CPU, whole run (s)", "%.1f", manager(func(m shardManager) float64 { return m.manager.cpuSeconds }))
		row(name+"object writes per host, Leases aside", "%.2f", manager(func(m shardManager) float64 { return perShardHost(m, hostWrites(m.calls)) }))
		row(name+"event writes per host", "%.2f", manager(func(m shardManager) float64 { return perShardHost(m, eventWrites(m.calls)) }))
		row(name+"writes refused (409 and such)", "%.0f", manager(func(m shardManager) float64 { return float64(refusedWrites(m.calls)) }))
		row(name+"writes in the steady window, Leases aside", "%.0f", manager(func(m shardManager) float64 {
			return float64(allWrites(m.steadyCalls) - leaseWrites(m.steadyCalls))
		}))
		row(name+"Lease writes in the steady window", "%.0f", manager(func(m shardManager) float64 { return float64(leaseWrites(m.steadyCalls)) }))
		row(name+"requests naming the other shard's objects", "%.0f", manager(func(m shardManager) float64 { return float64(sumCalls(m.wrongShard, everyCall)) }))
		row(name+"lists and watches without its watch filter", "%.0f", manager(func(m shardManager) float64 { return float64(sumCalls(m.unscopedLists, everyCall)) }))
	}
	return s
}

// outsideShards lists, per run and manager, every request outside its shard
// and how many of its hosts' Secrets and claims it wrote.
func (r report) outsideShards() section {
	s := section{
		title: "Requests outside the shard (from the audit log, each manager's whole run)",
		notes: []string{"An object is the other shard's when it is one of its hosts or named after one (claims `<host>-<pool>`, " +
			"Secrets, events) or carries the other shard's name (pools, templates, IPAddresses, the Lease). " +
			"A list or watch (the informers list by watching) is outside the shard when its label selector does not ask for " +
			"the manager's own watch-filter value."},
		table: table{header: []string{"run", "manager", "requests naming the other shard", "lists and watches without its watch filter",
			"its hosts' Secrets it wrote", "its hosts' claims it wrote"}},
	}
	for _, run := range r.runs {
		for _, shard := range shardNames {
			m := run.shards[shard]
			for _, query := range slices.Sorted(maps.Keys(m.unscopedQueries)) {
				s.notes = append(s.notes, fmt.Sprintf("Run %d, manager of %s, without its watch filter: %#q", run.run, shard, query))
			}
			s.table.add(strconv.Itoa(run.run), shard, describeCalls(m.wrongShard),
				fmt.Sprintf("%s (of %d)", describeCalls(m.unscopedLists), m.listsChecked),
				fmt.Sprintf("%d of %d", m.ownSecrets, m.hosts), fmt.Sprintf("%d of %d", m.ownClaims, m.hosts*len(pools)))
		}
	}
	return s
}

func (r report) shardHowToRepeat() section {
	return r.howToRepeatRuns(
		fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s), runs the IPAM stand-in in the harness and creates "+
			"the plain scenario's fleet of %d hosts in the namespace %q split in two: the first half is %s's, the second %s's. "+
			"Every host, pool and template carries `%s: <shard>`; each shard has two /16 IPPools of its own (10.10 and 10.20, "+
			"10.11 and 10.21) and %d opted-in Metal3MachineTemplates with their Metal3DataTemplates, whose selectors also ask for "+
			"the shard's label. It then starts two `%s` together, each as its own identity with `--watch-filter=<shard> "+
			"--leader-elect --leader-election-id=capm3-preprov-<shard> --leader-election-namespace=%s` "+
			"(`--kube-api-qps=%g --kube-api-burst=%d --host-concurrency=%d`, `%s`). After the last host of both shards is done it "+
			"waits %s plus %s of steady state and stops both. The floor then runs in %q with the managers stopped: the same "+
			"sharded fleet, and one floor per shard in parallel, each a client of its own with a manager's QPS and burst and "+
			"as many workers, watching only its shard. Requests are counted from the API server's audit log, per identity.",
			r.machine.kubeAPIVersion, r.cfg.hosts, controllerNamespace, shardNames[0], shardNames[1], clusterv1.WatchLabel,
			racks, r.cfg.manager, controllerNamespace,
			r.cfg.limits.qps, r.cfg.limits.burst, r.cfg.limits.concurrency, strings.Join(r.cfg.env, " "), settle, r.cfg.steady, floorNamespace))
}
