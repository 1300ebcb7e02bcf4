package baremetal

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
