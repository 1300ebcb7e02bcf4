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

package ipam

import (
	"context"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readPool reads a pool without copying it out of the cache: a pool holds
// an entry per host with --pool-preallocations, so a copy per read made
// each host's reconcile cost the size of its pools several times over. The
// pool returned is the cache's: never change it (DeepCopy first).
func readPool(ctx context.Context, reader client.Reader, key client.ObjectKey) (*ipamv1.IPPool, error) {
	pools, err := listPools(ctx, reader, key.Namespace)
	if err != nil {
		return nil, err
	}
	for i := range pools {
		if pools[i].Name == key.Name {
			return &pools[i], nil
		}
	}
	return nil, apierrors.NewNotFound(ipamv1.GroupVersion.WithResource("ippools").GroupResource(), key.Name)
}

// listPools lists the namespace's pools without copying them out of the
// cache: never change one (DeepCopy first).
func listPools(ctx context.Context, reader client.Reader, namespace string) ([]ipamv1.IPPool, error) {
	pools := &ipamv1.IPPoolList{}
	if err := reader.List(ctx, pools, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return pools.Items, nil
}
