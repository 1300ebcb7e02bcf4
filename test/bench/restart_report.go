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
	"strings"
	"time"
)

// goalCatchUp is the limit for a restart or a leader change.
const goalCatchUp = 60 * time.Second

// setUpWrites are writes to what the manager creates or patches when it sets
// a host up: claims, Secrets and the host itself.
func setUpWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool {
		return c.write() && (c.Resource == "ipclaims" || c.Resource == "secrets" || strings.HasPrefix(c.Resource, "baremetalhosts"))
	})
}

func statusWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && strings.HasSuffix(c.Resource, "/status") })
}

func leaseWrites(calls map[apiCall]int) int {
	return sumCalls(calls, func(c apiCall) bool { return c.write() && c.Resource == "leases" })
}

func (r report) restartSections() []section {
	return []section{
		r.machine.section(), r.restartGoals(), r.restartSummary(),
		r.callCounts("Requests of the restarted manager, by verb and resource, from its start until "+r.cfg.steady.String()+" after it caught up",
			func(run runResult) map[apiCall]int { return run.restart.restart.calls }),
		r.callCounts("Requests of the standby, by verb and resource, from the leader's kill until "+r.cfg.steady.String()+" after it caught up",
			func(run runResult) map[apiCall]int { return run.restart.takeover.calls }),
		r.restartHowToRepeat(),
	}
}

func (r report) restartGoals() section {
	s := section{title: "Goals", table: table{header: []string{"goal", "measured", "met"}}}
	for _, c := range []struct {
		name  string
		catch func(runResult) catchUp
	}{
		{"restart", func(run runResult) catchUp { return run.restart.restart }},
		{"leader change", func(run runResult) catchUp { return run.restart.takeover }},
	} {
		caughtUp := r.column(func(run runResult) float64 { return seconds(c.catch(run).duration) }).max
		s.table.add(fmt.Sprintf("%s: caught up within %s (worst run)", c.name, goalCatchUp),
			fmt.Sprintf("%.1f s", caughtUp), yesNo(caughtUp <= goalCatchUp.Seconds()))
		writes := r.column(func(run runResult) float64 { return float64(setUpWrites(c.catch(run).calls)) }).max
		s.table.add(c.name+": no claim, Secret or host writes (worst run)", fmt.Sprintf("%.0f", writes), yesNo(writes == 0))
		status := r.column(func(run runResult) float64 { return float64(statusWrites(c.catch(run).calls)) }).max
		s.table.add(c.name+": status writes, only where a value changed (worst run; none changed)", fmt.Sprintf("%.0f", status), yesNo(status == 0))
	}
	return s
}

func (r report) restartSummary() section {
	s := r.newSummary(
		"Caught up: the manager's host controller has reconciled as many times as there are hosts and, like the template " +
			"controller, has nothing queued and no reconcile in progress (its metrics, polled every 250 ms), and every " +
			"Metal3PreprovisioningTemplate counts exactly its rack's hosts, all ready, for its generation. " +
			"A restart counts from the new manager's start, a leader change from the leader's SIGKILL: the standby " +
			"waits for the Lease to expire first.")
	row := r.summaryRows(&s)
	row("set-up by the first manager, from the hosts' creation (s)", "%.1f", func(run runResult) float64 { return seconds(run.restart.setup) })
	row("set-up: peak RSS, VmHWM (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakRSS / mib })
	row("set-up: peak anonymous RSS, sampled each second (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakAnonRSS / mib })
	row("set-up: peak heap in use (MiB)", "%.0f", func(run runResult) float64 { return run.memory.peakHeapInuse / mib })
	row("set-up: heap in use at the end (MiB)", "%.0f", func(run runResult) float64 { return run.memory.endHeapInuse / mib })
	for _, c := range []struct {
		name  string
		catch func(runResult) catchUp
	}{
		{"restart", func(run runResult) catchUp { return run.restart.restart }},
		{"leader change", func(run runResult) catchUp { return run.restart.takeover }},
	} {
		row(c.name+": caught up after (s)", "%.1f", func(run runResult) float64 { return seconds(c.catch(run).duration) })
		row(c.name+": host reconciles per host when caught up", "%.2f", func(run runResult) float64 { return r.perHost(int(c.catch(run).reconciles)) })
		row(c.name+": requests", "%.0f", func(run runResult) float64 {
			return float64(sumCalls(c.catch(run).calls, func(apiCall) bool { return true }))
		})
		row(c.name+": claim, Secret and host writes", "%.0f", func(run runResult) float64 { return float64(setUpWrites(c.catch(run).calls)) })
		row(c.name+": status writes", "%.0f", func(run runResult) float64 { return float64(statusWrites(c.catch(run).calls)) })
		row(c.name+": Lease writes", "%.0f", func(run runResult) float64 { return float64(leaseWrites(c.catch(run).calls)) })
		row(c.name+": event writes", "%.0f", func(run runResult) float64 { return float64(eventWrites(c.catch(run).calls)) })
		row(c.name+": peak RSS, VmHWM (MiB)", "%.0f", func(run runResult) float64 { return c.catch(run).memory.peakRSS / mib })
		row(c.name+": peak anonymous RSS, sampled each second (MiB)", "%.0f",
			func(run runResult) float64 { return c.catch(run).memory.peakAnonRSS / mib })
		row(c.name+": peak heap in use (MiB)", "%.0f", func(run runResult) float64 { return c.catch(run).memory.peakHeapInuse / mib })
	}
	return s
}

// callCounts lists some requests of each run, as counts.
func (r report) callCounts(title string, calls func(runResult) map[apiCall]int) section {
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
			row = append(row, strconv.Itoa(calls(run)[call]))
		}
		s.table.add(row...)
	}
	return s
}

func (r report) restartHowToRepeat() section {
	return r.howToRepeatRuns(
		fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s), runs the IPAM stand-in in the harness, creates "+
			"the namespace %q with two /16 IPPools, %d Metal3PreprovisioningTemplates (the plain scenario's selectors and network data) "+
			"and %d paused hosts, and lets `%s` (`--kube-api-qps=%g --kube-api-burst=%d --host-concurrency=%d`, `%s`) set them up "+
			"until every template's status is right and the manager has written nothing for %s; it stops that manager (SIGTERM). "+
			"Restart: it starts a fresh manager and waits until it has caught up. Leader change: it starts a manager with "+
			"`--leader-elect`, waits until it has caught up, starts a second one with the same Lease, waits %s, and kills the first "+
			"(SIGKILL). Requests are counted from the API server's audit log for the manager's identity.",
			r.machine.kubeAPIVersion, controllerNamespace, racks, r.cfg.hosts, r.cfg.manager,
			r.cfg.limits.qps, r.cfg.limits.burst, r.cfg.limits.concurrency, strings.Join(r.cfg.env, " "), r.cfg.quiet, settle))
}
