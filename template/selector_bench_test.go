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
	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkHostSelector is what every host reconcile pays per template:
// build the selector from a CAPM3 HostSelector, then match the host's labels.
func BenchmarkHostSelector(b *testing.B) {
	hostSelector := capm3.HostSelector{
		MatchLabels: map[string]string{"site": "fra1", "role": "worker"},
		MatchExpressions: []capm3.HostSelectorRequirement{
			{Key: "rack", Operator: "in", Values: []string{"r1", "r2", "r3"}},
			{Key: "maintenance", Operator: "!"},
		},
	}
	hostLabels := labels.Set{
		"site": "fra1", "role": "worker", "rack": "r2",
		"hardware.example.com/profile": "gen11", "topology.example.com/row": "c",
	}
	b.ReportAllocs()
	for b.Loop() {
		selector, err := HostSelector(hostSelector)
		if err != nil {
			b.Fatal(err)
		}
		if !selector.Matches(hostLabels) {
			b.Fatal("the selector does not select the host")
		}
	}
}
