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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// The Secret cache holds our Secrets only, and with --watch-filter only
// those of our shard: one Secret entry, whatever the map order.
func TestCacheOptionsSecrets(t *testing.T) {
	t.Parallel()
	ours := labels.Set{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}
	shardA := labels.Merge(ours, labels.Set{clusterv1.WatchLabel: "shard-a"})
	shardB := labels.Merge(ours, labels.Set{clusterv1.WatchLabel: "shard-b"})
	for _, tt := range []struct {
		name        string
		watchFilter string
		cached      []labels.Set
		notCached   []labels.Set
	}{{
		name:      "no watch filter",
		cached:    []labels.Set{ours, shardA},
		notCached: []labels.Set{{}, {clusterv1.WatchLabel: "shard-a"}},
	}, {
		name:        "watch filter",
		watchFilter: "shard-a",
		cached:      []labels.Set{shardA},
		notCached:   []labels.Set{ours, shardB, {clusterv1.WatchLabel: "shard-a"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var secretEntries []cache.ByObject
			for obj, byObject := range CacheOptions("", tt.watchFilter).ByObject {
				if _, ok := obj.(*corev1.Secret); ok {
					secretEntries = append(secretEntries, byObject)
				}
			}
			require.Len(t, secretEntries, 1, "one cache entry for Secrets")
			for _, set := range tt.cached {
				assert.True(t, secretEntries[0].Label.Matches(set), "a Secret labelled %v is ours", set)
			}
			for _, set := range tt.notCached {
				assert.False(t, secretEntries[0].Label.Matches(set), "a Secret labelled %v is not ours", set)
			}
		})
	}
}
