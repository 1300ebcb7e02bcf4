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

package template

import (
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

func TestHostSelector(t *testing.T) {
	rack := map[string]string{"rack": "r1", "role": "worker", "site": "lon"}
	tests := []struct {
		name     string
		selector capm3.HostSelector
		labels   map[string]string
		matches  bool
		errorHas string
	}{
		{name: "empty selects every host", labels: rack, matches: true},
		{name: "empty selects unlabelled host", labels: nil, matches: true},
		{
			name:     "matchLabels all equal",
			selector: capm3.HostSelector{MatchLabels: map[string]string{"rack": "r1", "role": "worker"}},
			labels:   rack, matches: true,
		},
		{
			name:     "matchLabels one differs",
			selector: capm3.HostSelector{MatchLabels: map[string]string{"rack": "r2"}},
			labels:   rack, matches: false,
		},
		{
			name:     "matchLabels missing key",
			selector: capm3.HostSelector{MatchLabels: map[string]string{"zone": "a"}},
			labels:   rack, matches: false,
		},
		{
			name:     "in",
			selector: expressions(req("rack", "in", "r0", "r1")),
			labels:   rack, matches: true,
		},
		{
			name:     "in, not listed",
			selector: expressions(req("rack", "in", "r2")),
			labels:   rack, matches: false,
		},
		{
			name:     "notin",
			selector: expressions(req("rack", "notin", "r2")),
			labels:   rack, matches: true,
		},
		{
			name:     "notin, listed",
			selector: expressions(req("rack", "notin", "r1")),
			labels:   rack, matches: false,
		},
		{
			name:     "exists",
			selector: expressions(req("site", "exists")),
			labels:   rack, matches: true,
		},
		{
			name:     "exists, absent",
			selector: expressions(req("zone", "exists")),
			labels:   rack, matches: false,
		},
		{
			name:     "does not exist",
			selector: expressions(req("zone", "!")),
			labels:   rack, matches: true,
		},
		{
			name:     "does not exist, present",
			selector: expressions(req("rack", "!")),
			labels:   rack, matches: false,
		},
		{
			name:     "DoesNotExist spelled out is not an operator (CAPM3 uses \"!\")",
			selector: expressions(req("rack", "In", "r1"), req("zone", "DoesNotExist")),
			errorHas: `operator "DoesNotExist"`,
		},
		{
			name:     "upper-case In works",
			selector: expressions(req("rack", "IN", "r1")),
			labels:   rack, matches: true,
		},
		{
			name: "labels and expressions combine with AND",
			selector: capm3.HostSelector{
				MatchLabels:      map[string]string{"role": "worker"},
				MatchExpressions: []capm3.HostSelectorRequirement{req("rack", "in", "r2")},
			},
			labels: rack, matches: false,
		},
		{
			name:     "invalid label key",
			selector: capm3.HostSelector{MatchLabels: map[string]string{"bad key!": "x"}},
			errorHas: `hostSelector.matchLabels "bad key!"`,
		},
		{
			name:     "in without values",
			selector: expressions(req("rack", "in")),
			errorHas: "hostSelector.matchExpressions[0]",
		},
		{
			name:     "exists with values",
			selector: expressions(req("rack", "exists", "r1")),
			errorHas: "hostSelector.matchExpressions[0]",
		},
		{
			name:     "unknown operator",
			selector: expressions(req("rack", "like", "r1")),
			errorHas: `operator "like"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selector, err := HostSelector(tt.selector)
			if tt.errorHas != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.errorHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.matches, selector.Matches(labels.Set(tt.labels)))
		})
	}
}

func expressions(requirements ...capm3.HostSelectorRequirement) capm3.HostSelector {
	return capm3.HostSelector{MatchExpressions: requirements}
}

func req(key, operator string, values ...string) capm3.HostSelectorRequirement {
	return capm3.HostSelectorRequirement{Key: key, Operator: selection.Operator(operator), Values: values}
}
