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
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// callsPerHost is a table of requests per host (and in all), a column per
// run, writes first.
func (r report) callsPerHost(title string, calls func(runResult) map[apiCall]int) section {
	s := section{title: title, table: table{header: []string{"request"}}}
	kinds := map[apiCall]bool{}
	for _, run := range r.runs {
		s.table.header = append(s.table.header, fmt.Sprintf("run %d", run.run))
		for call := range calls(run) {
			kinds[call] = true
		}
	}
	if len(kinds) == 0 {
		return section{title: title, notes: []string{"None."}}
	}
	for _, call := range sortedCalls(kinds) {
		row := []string{call.String()}
		for _, run := range r.runs {
			row = append(row, fmt.Sprintf("%.3f (%d)", r.perHost(calls(run)[call]), calls(run)[call]))
		}
		s.table.add(row...)
	}
	return s
}

func sortedCalls(kinds map[apiCall]bool) []apiCall {
	return slices.SortedFunc(maps.Keys(kinds), func(a, b apiCall) int {
		if a.write() != b.write() {
			if a.write() {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb), cmp.Compare(strconv.FormatBool(a.Failed), strconv.FormatBool(b.Failed)))
	})
}

func (r report) steadyState() section {
	s := section{
		title: fmt.Sprintf("Manager requests in the steady window (%s, starting %s after the last host was done)", r.cfg.steady, settle),
		table: table{header: []string{"run", "requests"}},
	}
	for _, run := range r.runs {
		s.table.add(strconv.Itoa(run.run), describeCalls(run.steadyCalls))
	}
	return s
}

func describeCalls(calls map[apiCall]int) string {
	if len(calls) == 0 {
		return "none"
	}
	kinds := map[apiCall]bool{}
	for call := range calls {
		kinds[call] = true
	}
	parts := make([]string, 0, len(calls))
	for _, call := range sortedCalls(kinds) {
		parts = append(parts, fmt.Sprintf("%d %s", calls[call], call))
	}
	return strings.Join(parts, ", ")
}

func (r report) reconciles() section {
	s := section{
		title: "Manager reconciles per host, by controller (its metrics at the end of the run)",
		table: table{header: []string{"run", "controller", "reconciles/host", "errors/host", "reconcile time total s"}},
	}
	for _, run := range r.runs {
		for _, controller := range slices.Sorted(maps.Keys(run.manager.reconciles)) {
			s.table.add(strconv.Itoa(run.run), controller,
				fmt.Sprintf("%.2f", run.manager.reconciles[controller]/float64(r.cfg.hosts)),
				fmt.Sprintf("%.3f", run.manager.reconcileErrors[controller]/float64(r.cfg.hosts)),
				fmt.Sprintf("%.1f", run.manager.reconcileSeconds[controller]))
		}
	}
	return s
}

func (r report) restRequests() section {
	s := section{
		title: "Manager REST client requests, by method and code (its metrics; includes the informers' lists and watches)",
		table: table{header: []string{"run", "method code", "requests"}},
	}
	for _, run := range r.runs {
		for _, key := range slices.Sorted(maps.Keys(run.manager.requests)) {
			s.table.add(strconv.Itoa(run.run), key, fmt.Sprintf("%.0f", run.manager.requests[key]))
		}
	}
	return s
}

func (r report) cpu() section {
	s := section{
		title: "CPU seconds while processing, by process (the machine has " + strconv.Itoa(r.machine.cpus) + " CPUs; the harness runs the IPAM stand-in)",
		table: table{header: []string{"run", "process", "controller phase", "floor phase"}},
	}
	for _, run := range r.runs {
		names := map[string]bool{}
		for name := range run.controller.cpu {
			names[name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			floor := "-"
			if seconds, ok := run.floor.cpu[name]; ok {
				floor = fmt.Sprintf("%.1f", seconds)
			}
			s.table.add(strconv.Itoa(run.run), name, fmt.Sprintf("%.1f", run.controller.cpu[name]), floor)
		}
	}
	return s
}

func (r report) howToRepeat() section {
	pools, floor := "two /16 IPPools,", fmt.Sprintf("The floor then runs in the fresh namespace %q of the same control "+
		"plane, with the manager stopped (so it neither competes for the CPUs nor sees the floor's hosts): the same "+
		"hosts, then the same object writes from a client with the same QPS and burst and as many workers. ", floorNamespace)
	if r.cfg.clusterAPIPools {
		pools = "two /16 InClusterIPPools served by the in-cluster provider's stand-in, also in the harness,"
	}
	if !r.cfg.hasFloor() {
		floor = "No floor runs: " + noFloor + ". "
	}
	return section{title: "How to repeat", notes: []string{
		r.repeatCommand(),
		"",
		fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s and etcd from `bin/k8s`, every CRD installed), "+
			"runs the IPAM stand-in in the harness, creates the namespace %q with %s %d opted-in "+
			"Metal3MachineTemplates with their Metal3DataTemplates (two pools per host: the boot NIC and a storage VLAN) "+
			"and %d paused hosts, %s, then starts `%s` as its own process and identity "+
			"(`--kube-api-qps=%g --kube-api-burst=%d --host-concurrency=%d%s`, and the environment of its Deployment: `%s`). After the last host is done it waits %s "+
			"plus %s of steady state, then until the manager has written nothing for %s, and stops the manager. %s"+
			"Requests are counted from the API server's audit log, per identity.",
			r.machine.kubeAPIVersion, controllerNamespace, pools, racks, r.cfg.hosts, scenarioWords(r.cfg.scenario), r.cfg.manager,
			r.cfg.limits.qps, r.cfg.limits.burst, r.cfg.limits.concurrency, r.cfg.managerFlags(), strings.Join(r.cfg.env, " "), settle, r.cfg.steady, r.cfg.quiet, floor),
	}}
}

func scenarioWords(scenario string) string {
	if scenario == scenarioHardware {
		return "each with an inspected status.hardware (CPU with its flags, six NICs, four disks, RAM, firmware) written before the manager starts"
	}
	return "without status"
}

func (r report) howNoisy() section {
	notes := []string{r.loadNote()}
	if len(r.runs) > 1 {
		floor := ""
		if r.cfg.hasFloor() {
			floor = fmt.Sprintf("floor wall time %.0f%%, ratio %.0f%%, ",
				100*r.column(func(run runResult) float64 { return seconds(run.floor.wall) }).relative(),
				100*r.column(wallRatio).relative())
		}
		notes = append(notes, fmt.Sprintf(" Spread (max - min) / median over the runs: controller wall time %.0f%%, %speak RSS %.0f%%.",
			100*r.column(func(run runResult) float64 { return seconds(run.controller.wall) }).relative(), floor,
			100*r.column(func(run runResult) float64 { return run.memory.peakRSS }).relative()))
	}
	return section{title: "How noisy", notes: notes}
}

// howToRepeatRuns is the "How to repeat" section of a scenario: the command,
// what each run does, and how loaded the machine was.
func (r report) howToRepeatRuns(eachRun string) section {
	return section{title: "How to repeat", notes: []string{r.repeatCommand(), "", eachRun, "", r.loadNote()}}
}

func (r report) repeatCommand() string {
	return "`go build -o " + r.cfg.manager + " . && " + r.command + "` from the repository's top folder; `bin/k8s` must hold " +
		"kube-apiserver and etcd (`make kube-binaries`)."
}

// loadNote says how loaded the shared machine was when each run started.
func (r report) loadNote() string {
	loads := make([]string, 0, len(r.runs))
	for _, run := range r.runs {
		loads = append(loads, run.loadAverage)
	}
	return "The machine is shared with other engineers' builds and tests; the 1, 5 and 15 minute load averages when " +
		"each run started were: " + strings.Join(loads, "; ") + "."
}
