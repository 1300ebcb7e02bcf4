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
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/slim"
)

// CacheOptions keep in memory only what the controllers read, of one
// namespace or, with "", of all; with a watch filter, only objects labelled
// cluster.x-k8s.io/watch-filter with its value (--watch-filter).
func CacheOptions(namespace, watchFilter string) cache.Options {
	// Only our own Secrets: never BMC credentials or anything else. Set
	// once: ByObject is keyed by pointer, so a second &corev1.Secret{} would
	// be a second entry, and which one the cache used would depend on map order.
	ourSecrets := labels.Set{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}
	options := cache.Options{
		// We never read managed fields, often the largest part of an
		// object, and thousands of objects repeat the rest of their metadata.
		DefaultTransform: slim.Shared,
	}
	if namespace != "" {
		options.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	if watchFilter != "" {
		filter := labels.Set{clusterv1.WatchLabel: watchFilter}
		options.DefaultLabelSelector = labels.SelectorFromSet(filter)
		// A selector of its own replaces the default one: both labels.
		ourSecrets = labels.Merge(ourSecrets, filter)
	}
	options.ByObject = map[client.Object]cache.ByObject{
		&corev1.Secret{}:               {Label: labels.SelectorFromSet(ourSecrets)},
		&bmov1alpha1.BareMetalHost{}:   {Transform: slim.Host},
		&ipamv1.IPPool{}:               {Transform: slim.Pool},
		&ipamv1.IPClaim{}:              {Transform: slim.Claim},
		&ipamv1.IPAddress{}:            {Transform: slim.Address},
		&clusterv1.MachineDeployment{}: {Transform: slim.MachineDeployment},
	}
	return options
}
