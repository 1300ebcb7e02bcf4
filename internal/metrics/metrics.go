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

// Package metrics holds capm3-preprov's Prometheus metrics, served on the
// manager's metrics endpoint through controller-runtime's registry.
//
// Layer: an internal/ leaf; it imports nothing of this module.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// Failures counts hosts entering a failure, by reason (the reason of the
	// Warning event on the host): a render error, an IP claim error, an
	// unusable template or a template conflict.
	Failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capm3_preprov_host_failures_total",
		Help: "Hosts that entered a failure, by reason.",
	}, []string{"reason"})

	// SecondsToUnpause observes, when we unpause a host, how long it has
	// existed: from registration to network data set.
	SecondsToUnpause = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "capm3_preprov_host_seconds_to_unpause",
		Help:    "Seconds from a BareMetalHost's creation to the removal of its preprovisioning pause.",
		Buckets: []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	})

	hostsDesc = prometheus.NewDesc("capm3_preprov_hosts",
		"Hosts by phase, and by whether their BMC driver boots the deploy ramdisk over the network, which needs DHCP (needs_dhcp).",
		[]string{"phase", "needs_dhcp"}, nil)

	stalledDesc = prometheus.NewDesc("capm3_preprov_hosts_inspection_stalled",
		"Hosts we unpaused that BMO has not got past registering or inspecting within the inspection stall timeout.",
		nil, nil)
)

// HostGroup is one series of the hosts gauge.
type HostGroup struct {
	Phase string
	// BootNeedsDHCP: a template selects the host and its BMC driver boots
	// the deploy ramdisk over the network.
	BootNeedsDHCP bool
	// InspectionStalled: BMO has not got the host past registering or
	// inspecting in time since we unpaused it.
	InspectionStalled bool
}

// HostCounter reports how many hosts are in each group; nothing when it
// has nothing to report (a manager that does not lead, or has not counted
// every host yet).
type HostCounter interface {
	CountHosts() map[HostGroup]int
}

// hostsCollector reads, at scrape time, the counts a HostCounter keeps from
// the API objects, so the gauges never drift from what the cluster says;
// a scrape costs the same at any fleet size.
type hostsCollector struct {
	hosts HostCounter
}

func (c hostsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- hostsDesc
	ch <- stalledDesc
}

func (c hostsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.hosts.CountHosts()
	if counts == nil {
		return
	}
	byPhase := map[HostGroup]int{}
	stalled := 0
	for group, count := range counts {
		if group.InspectionStalled {
			stalled += count
		}
		group.InspectionStalled = false
		byPhase[group] += count
	}
	for group, count := range byPhase {
		ch <- prometheus.MustNewConstMetric(hostsDesc, prometheus.GaugeValue, float64(count), group.Phase, strconv.FormatBool(group.BootNeedsDHCP))
	}
	ch <- prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, float64(stalled))
}

// Register adds the metrics to controller-runtime's registry. Call it once.
func Register(hosts HostCounter) error {
	for _, collector := range []prometheus.Collector{Failures, SecondsToUnpause, hostsCollector{hosts: hosts}} {
		if err := metrics.Registry.Register(collector); err != nil {
			return err
		}
	}
	return nil
}
