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

package controllers

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

func TestMetricsOnTheManagersRegistry(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
		fixtures.MachineTemplate(ns, "broken", "absent", map[string]string{"role": "broken"}),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", map[string]string{"role": "broken"}),
	)
	waitForNetworkData(t, ns, "node-0")
	waitForEvent(t, ns, "node-1", baremetal.ReasonTemplateInvalid)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		families, err := metrics.Registry.Gather()
		require.NoError(c, err)
		byName := map[string]*dto.MetricFamily{}
		for _, family := range families {
			byName[family.GetName()] = family
		}
		require.Contains(c, byName, "capm3_preprov_host_seconds_to_unpause")
		assert.Positive(c, byName["capm3_preprov_host_seconds_to_unpause"].GetMetric()[0].GetHistogram().GetSampleCount())
		assert.Positive(c, valueWithLabel(byName["capm3_preprov_hosts"], "phase", string(baremetal.PhaseReady)))
		assert.Positive(c, valueWithLabel(byName["capm3_preprov_hosts"], "phase", string(baremetal.PhaseFailed)))
		assert.Positive(c, valueWithLabel(byName["capm3_preprov_host_failures_total"], "reason", baremetal.ReasonTemplateInvalid))
	}, waitTimeout, pollInterval)
}

// A manager that has just started (a restart, a new leader) counts every
// host at once in the hosts metric, from its cache's initial list: no host
// is reconciled or changes after it starts.
func TestHostsMetricCountsEveryHostOnAFreshManager(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
		fixtures.MachineTemplate(ns, "broken", "absent", map[string]string{"role": "broken"}),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", workers),
		fixtures.Host(ns, "node-2", "52:54:00:aa:bb:03", map[string]string{"role": "broken"}),
	)
	waitForNetworkData(t, ns, "node-0")
	waitForNetworkData(t, ns, "node-1")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonTemplateInvalid, getHost(c, ns, "node-2").Annotations[preprovv1.ProblemAnnotation])
	}, waitTimeout, pollInterval)

	fresh := startFreshHostTally(t, ns)
	assert.Nil(t, (&hostTally{tally: fresh.tally, elected: make(chan struct{})}).CountHosts(), "a manager that does not lead reports nothing")
	require.Eventually(t, fresh.synced, waitTimeout, pollInterval)

	byPhase := map[string]int{}
	for group, count := range fresh.CountHosts() {
		byPhase[group.Phase] += count
	}
	assert.Equal(t, map[string]int{string(baremetal.PhaseReady): 2, string(baremetal.PhaseFailed): 1}, byPhase)
}

func valueWithLabel(family *dto.MetricFamily, name, value string) float64 {
	if family == nil {
		return 0
	}
	for _, metric := range family.GetMetric() {
		for _, label := range metric.GetLabel() {
			if label.GetName() == name && label.GetValue() == value {
				if metric.GetGauge() != nil {
					return metric.GetGauge().GetValue()
				}
				return metric.GetCounter().GetValue()
			}
		}
	}
	return 0
}
