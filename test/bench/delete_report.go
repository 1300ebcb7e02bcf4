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

func deleteRatio(run runResult) float64 {
	return seconds(run.deletion.controller) / seconds(run.deletion.floor)
}

func (r report) deleteSections() []section {
	return []section{
		r.machine.section(), r.deleteGoals(), r.deleteSummary(),
		r.callsPerHost("Manager requests per deleted host, by verb and resource, from the first delete until "+settle.String()+
			" after the fleet was gone", func(run runResult) map[apiCall]int { return run.deletion.calls }),
		r.deleteHowToRepeat(),
	}
}

func (r report) deleteGoals() section {
	s := section{title: "Goals", table: table{header: []string{"goal", "measured", "met"}}}
	ratio, measured := r.column(deleteRatio).max, ""
	if unfinished := r.unfinishedDeletes(); unfinished > 0 {
		measured = fmt.Sprintf("not gone in %d of %d runs: more than ", unfinished, len(r.runs))
	}
	s.table.add(fmt.Sprintf("fleet gone within %.1fx the same deletes without the manager (worst run)", goalRatio),
		fmt.Sprintf("%s%.2fx", measured, ratio), yesNo(ratio <= goalRatio && measured == ""))
	return s
}

// unfinishedDeletes counts the runs whose manager left something when the
// harness stopped waiting.
func (r report) unfinishedDeletes() int {
	unfinished := 0
	for _, run := range r.runs {
		if run.deletion.left.any() {
			unfinished++
		}
	}
	return unfinished
}

func (r report) deleteSummary() section {
	s := r.newSummary("From the first host's delete until the fleet's last IPClaim, IPAddress and network data Secret was " +
		"gone, seen by a watch in the harness; with the manager running, then for the floor's fleet with no manager " +
		"(the garbage collector and the IPAM stand-in alone).")
	if r.cfg.deleteLimit > 0 {
		s.notes = append(s.notes, fmt.Sprintf("The harness stopped waiting for the manager's fleet %s after the first delete "+
			"(-delete-limit): a run stopped then counts the limit as its time, and the rows \"left\" say what it still had.", r.cfg.deleteLimit))
	}
	row := r.summaryRows(&s)
	row("fleet gone, manager running (s)", "%.1f", func(run runResult) float64 { return seconds(run.deletion.controller) })
	if r.cfg.deleteLimit > 0 {
		row("left: IPClaims, IPAddresses and Secrets", "%.0f", func(run runResult) float64 { return float64(run.deletion.left.objects) })
		row("left: spec.preAllocations entries", "%.0f", func(run runResult) float64 { return float64(run.deletion.left.entries) })
	}
	row("fleet gone, no manager (s)", "%.1f", func(run runResult) float64 { return seconds(run.deletion.floor) })
	row("ratio", "%.2f", deleteRatio)
	row("manager requests per deleted host", "%.2f", func(run runResult) float64 {
		return r.perHost(sumCalls(run.deletion.calls, func(apiCall) bool { return true }))
	})
	row("manager writes per deleted host", "%.2f", func(run runResult) float64 { return r.perHost(allWrites(run.deletion.calls)) })
	row("manager CPU while deleting (s)", "%.1f", func(run runResult) float64 { return run.deletion.cpu["manager"] })
	row("kube-apiserver CPU while deleting (s)", "%.1f", func(run runResult) float64 { return run.deletion.cpu["kube-apiserver"] })
	row("manager stopped within its grace period on SIGTERM (1 yes, 0 killed)", "%.0f", func(run runResult) float64 {
		if run.deletion.stopFailure != nil {
			return 0
		}
		return 1
	})
	return s
}

func (r report) deleteHowToRepeat() section {
	return r.howToRepeatRuns(
		fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s and its garbage collector), runs the IPAM "+
			"stand-in in the harness, creates the plain scenario's fleet in %q (%d paused hosts) and lets `%s` "+
			"(`--kube-api-qps=%g --kube-api-burst=%d --host-concurrency=%d%s`, `%s`) set it up until it has written nothing "+
			"for %s. Then the harness deletes every host, %d at a time, and waits until no claim, address or Secret of "+
			"the fleet is left%s; it stops the manager, lets the floor set up the same fleet in %q and deletes it the same "+
			"way. Requests are counted from the API server's audit log for the manager's identity.",
			r.machine.kubeAPIVersion, controllerNamespace, r.cfg.hosts, r.cfg.manager, r.cfg.limits.qps, r.cfg.limits.burst,
			r.cfg.limits.concurrency, r.cfg.managerFlags(), strings.Join(r.cfg.env, " "),
			r.cfg.quiet, creators, r.waitedFor(), floorNamespace))
}

// waitedFor says what the harness waited for besides the fleet's objects,
// and how long at most.
func (r report) waitedFor() string {
	var text string
	if r.cfg.poolPreallocations {
		text = " and its pools hold no spec.preAllocations entry"
	}
	if r.cfg.deleteLimit > 0 {
		text += fmt.Sprintf(", or for %s at most", r.cfg.deleteLimit)
	}
	return text
}
