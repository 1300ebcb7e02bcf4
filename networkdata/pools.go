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

package networkdata

import (
	"fmt"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

const (
	// Metal3IPAMGroup and Metal3PoolKind name a Metal3 IPAM IPPool, what a
	// pool reference without apiGroup and kind means.
	Metal3IPAMGroup = "ipam.metal3.io"
	Metal3PoolKind  = "IPPool"
	// ClusterAPIIPAMGroup is the group of Cluster API IPAM providers' pools
	// (the in-cluster provider's InClusterIPPool, Infoblox's, NetBox's).
	ClusterAPIIPAMGroup = "ipam.cluster.x-k8s.io"
	// prefixPoolSuffix ends the kinds of Cluster API IPAM pools that hand
	// out delegated prefixes (the in-cluster provider's InClusterPrefixPool
	// and GlobalInClusterPrefixPool).
	prefixPoolSuffix = "PrefixPool"
)

// Pool is one pool a template takes addresses from: a Metal3 IPAM IPPool,
// or the pool of a Cluster API IPAM provider, of any kind.
type Pool struct {
	Name     string
	APIGroup string
	Kind     string
}

// Metal3 tells a Metal3 IPAM IPPool (claimed with an IPClaim) from a Cluster
// API IPAM pool (claimed with an IPAddressClaim).
func (p Pool) Metal3() bool { return p.APIGroup == Metal3IPAMGroup }

// String names the pool as messages do: `IPPool "rack1"`,
// `InClusterIPPool "rack1"`.
func (p Pool) String() string { return fmt.Sprintf("%s %q", p.Kind, p.Name) }

func metal3Pool(name string) Pool {
	return Pool{Name: name, APIGroup: Metal3IPAMGroup, Kind: Metal3PoolKind}
}

// poolFromRef takes a Metal3 IPPool or a Cluster API IPAM pool; an empty
// apiGroup or kind defaults to a Metal3 IPPool, as in CAPM3 (poolRefs.addRef
// in baremetal/metal3data_manager.go).
func (c *compiler) poolFromRef(ref capm3.IPPoolReference, field string) (Pool, error) {
	pool := Pool{Name: ref.Name, APIGroup: ref.APIGroup, Kind: ref.Kind}
	if pool.APIGroup == "" {
		pool.APIGroup = Metal3IPAMGroup
	}
	if pool.Kind == "" {
		pool.Kind = Metal3PoolKind
	}
	switch {
	case pool.Metal3() && pool.Kind != Metal3PoolKind:
		return Pool{}, inputErr(field, "refers to kind %s of apiGroup %s, which has no such kind; refer to an IPPool of %s or to a pool of a Cluster API IPAM provider (apiGroup %s)",
			quote(pool.Kind), quote(pool.APIGroup), Metal3IPAMGroup, ClusterAPIIPAMGroup)
	case !pool.Metal3() && pool.APIGroup != ClusterAPIIPAMGroup:
		return Pool{}, inputErr(field, "refers to kind %s of apiGroup %s, but addresses come from Metal3 IPAM (apiGroup %s, kind IPPool) or a Cluster API IPAM provider (apiGroup %s and the provider's pool kind, such as InClusterIPPool)",
			quote(pool.Kind), quote(pool.APIGroup), Metal3IPAMGroup, ClusterAPIIPAMGroup)
	case pool.APIGroup == ClusterAPIIPAMGroup && strings.HasSuffix(pool.Kind, prefixPoolSuffix):
		return Pool{}, inputErr(field, "refers to kind %s of apiGroup %s, a pool of delegated prefixes: the IPAddress it gives is a prefix "+
			"delegated to a cluster or a router, not the address of a host; refer to a pool of host addresses, such as InClusterIPPool "+
			"or GlobalInClusterIPPool",
			quote(pool.Kind), pool.APIGroup)
	}
	return c.usePool(pool, field)
}

// poolFromAnnotation reads a pool name from a BareMetalHost annotation. It
// names a Metal3 IPPool: CAPM3 (poolRefs.addFromAnnotation) knows no other.
func (c *compiler) poolFromAnnotation(a capm3.FromPoolAnnotation, field, alternative string) (Pool, error) {
	name, err := c.annotation(a.Object, a.Annotation, field, alternative)
	if err != nil {
		return Pool{}, err
	}
	if name == "" {
		return Pool{}, inputErr(field+".annotation", "BareMetalHost annotation %s is missing or empty; set it to the name of a Metal3 IPPool, or use %s", quote(a.Annotation), alternative)
	}
	return c.usePool(metal3Pool(name), field)
}

// usePool records a pool the plan takes addresses from. Addresses are keyed
// by pool name, as in CAPM3, which refuses two pools of one name and
// different kinds (poolRefs.addRef): so do we.
func (c *compiler) usePool(pool Pool, field string) (Pool, error) {
	known, seen := c.plan.pools[pool.Name]
	if seen && known != pool {
		return Pool{}, inputErr(field, "refers to %s of apiGroup %s, but the template also takes addresses from %s of apiGroup %s under that name: "+
			"CAPM3 refuses two pools of the same name; rename one of them", pool, pool.APIGroup, known, known.APIGroup)
	}
	c.plan.pools[pool.Name] = pool
	return pool, nil
}
