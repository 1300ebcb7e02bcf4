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

package plugin

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// parseAddresses reads --address values, "<pool>=<IP>".
func parseAddresses(values []string) (map[string]netip.Addr, error) {
	addresses := map[string]netip.Addr{}
	for _, value := range values {
		pool, ip, ok := strings.Cut(value, "=")
		address, err := netip.ParseAddr(ip)
		if !ok || pool == "" || err != nil {
			return nil, fmt.Errorf("--address %q: write it as <IPPool name>=<IP address>, for example provisioning=192.168.111.100", value)
		}
		addresses[pool] = address
	}
	return addresses, nil
}

// givenAddresses is the claim source of --address: each pool's address as
// IPAM would hand it out, from the pool read with reader.
func givenAddresses(reader client.Reader, given map[string]netip.Addr) claimSource {
	return func(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string) ([]ipam.PoolState, []string, error) {
		states := make([]ipam.PoolState, 0, len(pools))
		for _, pool := range pools {
			state := ipam.PoolState{Pool: pool, Claim: ipam.ClaimName(host.Name, pool)}
			ip, ok := given[pool]
			if !ok {
				state.Failed = fmt.Sprintf("no address given for IPPool %q: pass --address %s=<IP>", pool, pool)
				states = append(states, state)
				continue
			}
			address, err := poolAddress(ctx, reader, host.Namespace, pool, ip)
			if err != nil {
				return nil, nil, err
			}
			state.Address = address
			states = append(states, state)
		}
		return states, nil, nil
	}
}

// clusterClaims is the claim source of the cluster: the controller's own
// claim code, with its writes recorded instead of sent; --address fills the
// pools the host has no address from yet.
func clusterClaims(claims *ipam.Claims, reader client.Reader, recorder *writeRecorder, given map[string]netip.Addr) claimSource {
	return func(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string) ([]ipam.PoolState, []string, error) {
		// A store of its own: this run has written nothing yet.
		states, err := claims.Ensure(ctx, host, pools, &expectations.Writes{})
		if err != nil {
			return nil, nil, err
		}
		for i, state := range states {
			ip, ok := given[state.Pool]
			if !ok || state.Address != nil {
				continue
			}
			if states[i].Address, err = poolAddress(ctx, reader, host.Namespace, state.Pool, ip); err != nil {
				return nil, nil, err
			}
		}
		return states, recorder.Writes, nil
	}
}

// poolAddress is the address IPAM gives for ip from a pool: the prefix,
// gateway and DNS servers of the pool entry (spec.pools[]) that holds ip,
// else of the pool, as test/standins/ipamstandin's newAddress follows Metal3 IPAM.
func poolAddress(ctx context.Context, reader client.Reader, namespace, poolName string, ip netip.Addr) (*networkdata.Address, error) {
	pool := &ipamv1.IPPool{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: poolName}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("IPPool %q is not in namespace %q: give its file with -f, for the prefix, gateway and DNS servers of --address %s=%s",
				poolName, namespace, poolName, ip)
		}
		return nil, err
	}
	for _, entry := range pool.Spec.Pools {
		if !entryHolds(entry, ip) {
			continue
		}
		prefix, gateway, dnsServers := pool.Spec.Prefix, pool.Spec.Gateway, pool.Spec.DNSServers
		if entry.Prefix != 0 {
			prefix = entry.Prefix
		}
		if entry.Gateway != nil {
			gateway = entry.Gateway
		}
		if len(entry.DNSServers) != 0 {
			dnsServers = entry.DNSServers
		}
		address := &networkdata.Address{IP: ip.String(), Prefix: prefix}
		if gateway != nil {
			address.Gateway = string(*gateway)
		}
		for _, server := range dnsServers {
			address.DNSServers = append(address.DNSServers, string(server))
		}
		return address, nil
	}
	return nil, fmt.Errorf("--address %s=%s: the address is in none of IPPool %q's spec.pools", poolName, ip, poolName)
}

// entryHolds reports whether ip is within a pool entry's start, end and subnet.
func entryHolds(entry ipamv1.Pool, ip netip.Addr) bool {
	if entry.Start == nil && entry.End == nil && entry.Subnet == nil {
		return false
	}
	if entry.Start != nil {
		start, err := netip.ParseAddr(string(*entry.Start))
		if err != nil || ip.Compare(start) < 0 {
			return false
		}
	}
	if entry.End != nil {
		end, err := netip.ParseAddr(string(*entry.End))
		if err != nil || ip.Compare(end) > 0 {
			return false
		}
	}
	if entry.Subnet != nil {
		subnet, err := netip.ParsePrefix(string(*entry.Subnet))
		if err != nil || !subnet.Contains(ip) {
			return false
		}
	}
	return true
}
