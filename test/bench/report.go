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
	"strconv"
	"time"
)

// Goals of the issue "Performance at fleet scale".
const (
	goalRatio      = 1.5
	goalRSSMiB     = 200
	goalRSSAtHosts = 5000
)

const mib = 1 << 20

// report is every run of one invocation.
type report struct {
	cfg     config
	command string
	date    time.Time
	machine machine
	runs    []runResult
}

func (r report) sections() []section {
	switch r.cfg.scenario {
	case scenarioRestart:
		return r.restartSections()
	case scenarioHandoff:
		return r.handoffSections()
	case scenarioShard:
		return r.shardSections()
	case scenarioDelete:
		return r.deleteSections()
	case scenarioHerd:
		return r.herdSections()
	}
	return []section{
		r.machine.section(), r.goals(), r.summary(), r.perRun(),
		r.callsPerHost("Manager requests per host, by verb and resource, until it was quiet", func(run runResult) map[apiCall]int { return run.managerCalls }),
		r.steadyState(),
		r.callsPerHost("Floor requests per host (check: the floor does exactly the minimum)", func(run runResult) map[apiCall]int { return run.floorCalls }),
		r.reconciles(), r.restRequests(), r.cpu(), r.howToRepeat(), r.howNoisy(),
	}
}

// column collects one number per run.
func (r report) column(value func(runResult) float64) spread {
	values := make([]float64, 0, len(r.runs))
	for _, run := range r.runs {
		values = append(values, value(run))
	}
	return spreadOf(values)
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func wallRatio(run runResult) float64 { return seconds(run.controller.wall) / seconds(run.floor.wall) }

func processingRatio(run runResult) float64 {
	return seconds(run.controller.processing) / seconds(run.floor.processing)
}

// perHost divides by the number of hosts.
func (r report) perHost(count int) float64 { return float64(count) / float64(r.cfg.hosts) }

// objectWrites are the writes that are not events.
func objectWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && c.Resource != "events" })
}

func eventWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && c.Resource == "events" })
}

func refusedWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && c.Failed })
}

func allWrites(calls map[apiCall]int) int { return sumCalls(calls, apiCall.write) }

func sumCalls(calls map[apiCall]int, keep func(apiCall) bool) int {
	total := 0
	for call, n := range calls {
		if keep(call) {
			total += n
		}
	}
	return total
}

func (r report) goals() section {
	s := section{title: "Goals", table: table{header: []string{"goal", "measured", "met"}}}
	floorGoal := fmt.Sprintf("controller wall time within %.1fx of the floor (median run)", goalRatio)
	if r.cfg.hasFloor() {
		ratio := r.column(wallRatio).median
		s.table.add(floorGoal, fmt.Sprintf("%.2fx", ratio), yesNo(ratio <= goalRatio))
	} else {
		s.table.add(floorGoal, "no floor: "+noFloor, "not measured here")
	}
	steady := r.column(func(run runResult) float64 { return float64(allWrites(run.steadyCalls)) }).max
	steadyEvents := r.column(func(run runResult) float64 { return float64(eventWrites(run.steadyCalls)) }).max
	s.table.add(fmt.Sprintf("zero writes in %s of steady state (worst run)", r.cfg.steady),
		fmt.Sprintf("%.0f, of which %.0f events", steady, steadyEvents), yesNo(steady == 0))
	rss := r.column(func(run runResult) float64 { return run.memory.peakRSS }).median / mib
	rssGoal := fmt.Sprintf("manager peak RSS under %d MiB at %d hosts (median run)", goalRSSMiB, goalRSSAtHosts)
	if r.cfg.hosts == goalRSSAtHosts {
		s.table.add(rssGoal, fmt.Sprintf("%.0f MiB", rss), yesNo(rss < goalRSSMiB))
	} else {
		s.table.add(rssGoal, fmt.Sprintf("%.0f MiB at %d hosts", rss, r.cfg.hosts), "not measured here")
	}
	minimum := len(pools) + 2
	writes := r.column(func(run runResult) float64 { return r.perHost(objectWrites(run.managerCalls)) }).max
	s.table.add(fmt.Sprintf("object writes per host at the minimum (%d: a claim per pool, the Secret, the patch; worst run)", minimum),
		fmt.Sprintf("%.4f", writes), yesNo(writes <= float64(minimum)))
	events := r.column(func(run runResult) float64 { return r.perHost(eventWrites(run.managerCalls)) }).max
	s.table.add("event writes per host: the one set-up event (worst run)", fmt.Sprintf("%.4f", events), yesNo(events <= 1))
	return s
}

// noFloor says why a run without a floor (config.hasFloor) has none.
const noFloor = "the floor makes Metal3 IPClaims; compare with the plain scenario's floor"

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// newSummary is a "Summary over N run(s)" section with a note on what its
// metrics measure; summaryRows adds its rows.
func (r report) newSummary(note string) section {
	return section{
		title: fmt.Sprintf("Summary over %d run(s)", len(r.runs)),
		notes: []string{note},
		table: table{header: []string{"metric", "min", "median", "max"}},
	}
}

// summaryRows returns the function that adds a metric's min, median and max
// over the runs to a summary section.
func (r report) summaryRows(s *section) func(name, format string, value func(runResult) float64) {
	return func(name, format string, value func(runResult) float64) {
		v := r.column(value)
		s.table.add(name, fmt.Sprintf(format, v.min), fmt.Sprintf(format, v.median), fmt.Sprintf(format, v.max))
	}
}

func (r report) summary() section {
	s := r.newSummary(
		"Wall time: from the start of the hosts' creation to the last host unpaused with its Secret. " +
			"Processing: from the manager's (the floor's) start to the last host done. " +
			"Per host: from the start of its creation to done, seen by a watch in the harness.")
	all := r.summaryRows(&s)
	floor := all
	if !r.cfg.hasFloor() {
		s.notes = append(s.notes, "No floor rows: "+noFloor+".")
		floor = func(string, string, func(runResult) float64) {}
	}
	all("controller wall time (s)", "%.1f", func(run runResult) float64 { return seconds(run.controller.wall) })
	floor("floor wall time (s)", "%.1f", func(run runResult) float64 { return seconds(run.floor.wall) })
	floor("ratio controller / floor, wall", "%.2f", wallRatio)
	all("host creation (s), controller phase", "%.1f", func(run runResult) float64 { return seconds(run.controller.creating) })
	all("controller processing (s)", "%.1f", func(run runResult) float64 { return seconds(run.controller.processing) })
	floor("floor processing (s)", "%.1f", func(run runResult) float64 { return seconds(run.floor.processing) })
	floor("ratio controller / floor, processing", "%.2f", processingRatio)
	all("controller per host p50 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.controller.latencies, 50)) })
	all("controller per host p99 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.controller.latencies, 99)) })
	floor("floor per host p50 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.floor.latencies, 50)) })
	floor("floor per host p99 (s)", "%.1f", func(run runResult) float64 { return seconds(percentile(run.floor.latencies, 99)) })
	all("manager object writes per host", "%.2f", func(run runResult) float64 { return r.perHost(objectWrites(run.managerCalls)) })
	all("manager writes refused (409 and such), objects and events, per host", "%.2f", func(run runResult) float64 { return r.perHost(refusedWrites(run.managerCalls)) })
	all("manager event writes per host", "%.2f", func(run runResult) float64 { return r.perHost(eventWrites(run.managerCalls)) })
	all("manager writes in the steady window", "%.0f", func(run runResult) float64 { return float64(allWrites(run.steadyCalls)) })
	all("manager's last write, after the last host was done (s)", "%.1f", func(run runResult) float64 { return seconds(run.lastWrite) })
	all("manager peak RSS, VmHWM (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakRSS / mib })
	all("manager peak anonymous RSS, sampled each second (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakAnonRSS / mib })
	all("manager peak file-backed RSS: the binary's pages, sampled each second (MiB)", "%.0f",
		func(run runResult) float64 { return run.memory.peakFileRSS / mib })
	all("manager RSS at the end (MiB)", "%.0f", func(run runResult) float64 { return run.memory.endRSS / mib })
	all("manager peak heap alloc (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakHeapAlloc / mib })
	all("manager peak heap in use (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakHeapInuse / mib })
	all("manager peak goroutines", "%.0f", func(run runResult) float64 { return run.memory.peakGoroutines })
	all("manager heap in use at the end (MiB)", "%.0f", func(run runResult) float64 { return run.memory.endHeapInuse / mib })
	all("manager CPU, whole run (s)", "%.1f", func(run runResult) float64 { return run.manager.cpuSeconds })
	return s
}

func (r report) perRun() section {
	s := section{title: "Per run", table: table{header: []string{
		"run", "load avg at start", "ctrl wall s", "floor wall s", "ratio", "ctrl proc s", "floor proc s", "ratio proc",
		"p50 s", "p99 s", "writes/host", "events/host", "steady writes", "peak RSS MiB", "peak heap MiB",
	}}}
	floor := func(format string, value float64) string {
		if !r.cfg.hasFloor() {
			return "-"
		}
		return fmt.Sprintf(format, value)
	}
	for _, run := range r.runs {
		s.table.add(strconv.Itoa(run.run), run.loadAverage,
			fmt.Sprintf("%.1f", seconds(run.controller.wall)), floor("%.1f", seconds(run.floor.wall)),
			floor("%.2f", wallRatio(run)),
			fmt.Sprintf("%.1f", seconds(run.controller.processing)), floor("%.1f", seconds(run.floor.processing)),
			floor("%.2f", processingRatio(run)),
			fmt.Sprintf("%.1f", seconds(percentile(run.controller.latencies, 50))),
			fmt.Sprintf("%.1f", seconds(percentile(run.controller.latencies, 99))),
			fmt.Sprintf("%.2f", r.perHost(objectWrites(run.managerCalls))),
			fmt.Sprintf("%.2f", r.perHost(eventWrites(run.managerCalls))),
			strconv.Itoa(allWrites(run.steadyCalls)),
			fmt.Sprintf("%.0f", run.memory.peakRSS/mib), fmt.Sprintf("%.0f", run.memory.peakHeapInuse/mib))
	}
	return s
}
