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
	"strings"
)

// claims is how many claims the fleet has: one per host and pool.
func (r report) claims() int { return r.cfg.hosts * len(pools) }

func claimWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && c.Resource == "ipclaims" })
}

func (r report) handoffSections() []section {
	return []section{
		r.machine.section(), r.handoffGoals(), r.handoffSummary(),
		r.callCounts("Manager requests, by verb and resource, from the simulated CAPM3's start until the steady window",
			func(run runResult) map[apiCall]int { return run.handoff.calls }),
		r.callCounts("Manager requests in the steady window ("+r.cfg.steady.String()+", starting "+settle.String()+" after the last claim was handed over)",
			func(run runResult) map[apiCall]int { return run.handoff.steadyCalls }),
		r.handoffHowToRepeat(),
	}
}

func (r report) handoffGoals() section {
	s := section{title: "Goals", table: table{header: []string{"goal", "measured", "met"}}}
	perClaim := r.column(func(run runResult) float64 { return float64(claimWrites(run.handoff.calls)) / float64(r.claims()) }).max
	s.table.add("handoff writes per claim: 1 (worst run)", fmt.Sprintf("%.4f", perClaim), yesNo(perClaim <= 1))
	others := r.column(func(run runResult) float64 {
		return float64(allWrites(run.handoff.calls) - claimWrites(run.handoff.calls))
	}).max
	s.table.add("no other writes while handing over (worst run)", fmt.Sprintf("%.0f", others), yesNo(others == 0))
	steady := r.column(func(run runResult) float64 { return float64(allWrites(run.handoff.steadyCalls)) }).max
	s.table.add(fmt.Sprintf("zero writes in %s after the handoff (worst run)", r.cfg.steady), fmt.Sprintf("%.0f", steady), yesNo(steady == 0))
	return s
}

func (r report) handoffSummary() section {
	s := r.newSummary(
		"Per claim: from its host's Metal3Data created (the create call returned) to the claim having that Metal3Data " +
			"as an owner, seen by a watch in the harness. The simulated CAPM3 provisions as fast as the harness's client " +
			"lets it, faster than the manager's client limits, so the latencies include the manager's queue.")
	row := r.summaryRows(&s)
	row("set-up by the manager, from the hosts' creation (s)", "%.1f", func(run runResult) float64 { return seconds(run.handoff.setup) })
	row("simulated CAPM3 provisioning every host (s)", "%.1f", func(run runResult) float64 { return seconds(run.handoff.provisioning) })
	row("from CAPM3's start to the last claim handed over (s)", "%.1f", func(run runResult) float64 { return seconds(run.handoff.handedOver) })
	for _, p := range []float64{50, 99, 100} {
		row(fmt.Sprintf("Metal3Data to owner reference, per claim p%.0f (s)", p), "%.2f",
			func(run runResult) float64 { return seconds(percentile(run.handoff.latencies, p)) })
	}
	row("manager claim writes per claim", "%.3f", func(run runResult) float64 { return float64(claimWrites(run.handoff.calls)) / float64(r.claims()) })
	row("manager writes refused (409 and such)", "%.0f", func(run runResult) float64 { return float64(refusedWrites(run.handoff.calls)) })
	row("manager writes, all, while handing over", "%.0f", func(run runResult) float64 { return float64(allWrites(run.handoff.calls)) })
	row("manager writes in the steady window", "%.0f", func(run runResult) float64 { return float64(allWrites(run.handoff.steadyCalls)) })
	return s
}

func (r report) handoffHowToRepeat() section {
	return r.howToRepeatRuns(
		fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s), runs the IPAM stand-in in the harness, creates "+
			"the plain scenario's fleet in %q (%d opted-in Metal3MachineTemplates with their Metal3DataTemplates, %d paused hosts) "+
			"and lets `%s` (`--kube-api-qps=%g --kube-api-burst=%d --host-concurrency=%d`, `%s`) set it up until it has written "+
			"nothing for %s. Then a simulated CAPM3 (`framework.ProvisionAsCAPM3`, %d at a time, as the admin) provisions every "+
			"host: a Metal3Machine annotated with the host, the host's consumerRef, a Metal3DataClaim and the Metal3Data of "+
			"its rack's Metal3DataTemplate. After the last claim has its Metal3Data owner it waits %s plus %s of steady state. "+
			"Requests are counted from the API server's audit log for the manager's identity.",
			r.machine.kubeAPIVersion, controllerNamespace, racks, r.cfg.hosts, r.cfg.manager,
			r.cfg.limits.qps, r.cfg.limits.burst, r.cfg.limits.concurrency, strings.Join(r.cfg.env, " "), r.cfg.quiet,
			creators, settle, r.cfg.steady))
}
