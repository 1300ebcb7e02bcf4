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

import "fmt"

// claimWritesPerFreedAddress is how many IPClaims the manager created and
// deleted for each address the deleted hosts freed.
func claimWritesPerFreedAddress(run runResult) float64 {
	writes := sumCalls(run.herd.calls, func(c apiCall) bool {
		return c.Resource == "ipclaims" && (c.Verb == "create" || c.Verb == "delete")
	})
	return float64(writes) / float64(max(run.herd.freed, 1))
}

func (r report) herdSections() []section {
	return []section{
		r.machine.section(), r.herdSummary(),
		r.callsPerHost("Manager requests per host, by verb and resource, from the first delete until it was quiet",
			func(run runResult) map[apiCall]int { return run.herd.calls }),
		r.herdHowToRepeat(),
	}
}

func (r report) herdSummary() section {
	s := r.newSummary(fmt.Sprintf("A pool of %d addresses, %d hosts on it: %d set up, the others' claims failed. The %d set up are "+
		"deleted at once; counted from the first delete until the manager was quiet again.",
		herdPoolSize, r.cfg.hosts, herdPoolSize, herdPoolSize))
	row := r.summaryRows(&s)
	row("addresses freed", "%.0f", func(run runResult) float64 { return float64(run.herd.freed) })
	row("freed addresses taken by waiting hosts after (s)", "%.1f", func(run runResult) float64 { return seconds(run.herd.taken) })
	row("IPClaim creates and deletes per freed address", "%.1f", claimWritesPerFreedAddress)
	row("manager writes per freed address", "%.1f", func(run runResult) float64 {
		return float64(allWrites(run.herd.calls)) / float64(max(run.herd.freed, 1))
	})
	return s
}

func (r report) herdHowToRepeat() section {
	return r.howToRepeatRuns(fmt.Sprintf("Each run starts a fresh control plane (kube-apiserver %s and its garbage collector), runs the "+
		"IPAM stand-in in the harness, creates in %q one IPPool of %d addresses, a Metal3PreprovisioningTemplate drawing every "+
		"host's address from it and %d paused hosts, and starts `%s`. Once %d hosts are set up, the others' claims have failed "+
		"and the manager has written nothing for %s, the harness deletes the hosts set up and waits until %d waiting hosts have "+
		"their network data and the manager is quiet again. Requests are counted from the API server's audit log for the "+
		"manager's identity.", r.machine.kubeAPIVersion, controllerNamespace, herdPoolSize, r.cfg.hosts, r.cfg.manager,
		herdPoolSize, r.cfg.quiet, herdPoolSize))
}
