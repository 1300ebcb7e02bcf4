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

// The kinds of the claims of the two IPAM families.
const (
	metal3ClaimKind     = "IPClaim"
	clusterAPIClaimKind = "IPAddressClaim"
)

// givenAddress is one --address value: an IP, and for a Cluster API IPAM
// pool the prefix and gateway its provider would write on the IPAddress.
type givenAddress struct {
	IP netip.Addr
	// Prefix is -1 when not given.
	Prefix  int
	Gateway netip.Addr
	text    string
}

// parseAddresses reads --address values, "<pool>=<IP>[/<prefix>][,<gateway>]".
func parseAddresses(values []string) (map[string]givenAddress, error) {
	addresses := map[string]givenAddress{}
	for _, value := range values {
		pool, text, ok := strings.Cut(value, "=")
		given, err := parseAddress(text)
		if !ok || pool == "" || err != nil {
			return nil, fmt.Errorf("--address %q: write it as <pool name>=<IP address>, for example provisioning=192.168.111.100; "+
				"for a Cluster API IPAM pool add the prefix and the gateway, if any: rack1=10.0.0.5/24,10.0.0.1", value)
		}
		given.text = value
		addresses[pool] = given
	}
	return addresses, nil
}

func parseAddress(text string) (givenAddress, error) {
	given := givenAddress{Prefix: -1}
	address, gateway, hasGateway := strings.Cut(text, ",")
	var err error
	if strings.Contains(address, "/") {
		var prefix netip.Prefix
		prefix, err = netip.ParsePrefix(address)
		given.IP, given.Prefix = prefix.Addr(), prefix.Bits()
	} else {
		given.IP, err = netip.ParseAddr(address)
	}
	if err == nil && hasGateway {
		given.Gateway, err = netip.ParseAddr(gateway)
	}
	return given, err
}

// givenAddresses is the claim source of --address: each pool's address as
// IPAM would hand it out, from the Metal3 IPPool read with reader, or as
// given for a Cluster API IPAM pool.
func givenAddresses(reader client.Reader, given map[string]givenAddress) claimSource {
	return func(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string, clusterAPIPools []networkdata.Pool,
	) ([]ipam.PoolState, []string, error) {
		states := make([]ipam.PoolState, 0, len(pools)+len(clusterAPIPools))
		for _, pool := range pools {
			state := ipam.PoolState{Pool: pool, Claim: ipam.ClaimName(host.Name, pool), PoolKind: networkdata.Metal3PoolKind, ClaimKind: metal3ClaimKind}
			address, ok := given[pool]
			if !ok {
				state.Failed = fmt.Sprintf("no address given for IPPool %q: pass --address %s=<IP>", pool, pool)
				states = append(states, state)
				continue
			}
			var err error
			if state.Address, err = poolAddress(ctx, reader, host.Namespace, pool, address); err != nil {
				return nil, nil, err
			}
			states = append(states, state)
		}
		for _, pool := range clusterAPIPools {
			state := ipam.PoolState{Pool: pool.Name, Claim: ipam.ClaimName(host.Name, pool.Name), PoolKind: pool.Kind, ClaimKind: clusterAPIClaimKind}
			address, ok := given[pool.Name]
			if !ok {
				state.Failed = fmt.Sprintf("no address given for %s: pass --address %s=<IP>/<prefix>[,<gateway>]", pool, pool.Name)
			} else {
				state.Address, state.Failed = clusterAPIAddress(pool, address)
			}
			states = append(states, state)
		}
		return states, nil, nil
	}
}

// clusterClaims is the claim source of the cluster: the controller's own
// claim code, with its writes recorded instead of sent; --address fills the
// pools the host has no address from yet.
func clusterClaims(claims *ipam.Claims, reader client.Reader, recorder *writeRecorder, given map[string]givenAddress) claimSource {
	return func(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string, clusterAPIPools []networkdata.Pool,
	) ([]ipam.PoolState, []string, error) {
		// A store of its own: this run has written nothing yet.
		writes := &expectations.Writes{}
		states, err := claims.Ensure(ctx, host, pools, writes)
		if err != nil {
			return nil, nil, err
		}
		for i, state := range states {
			address, ok := given[state.Pool]
			if !ok || state.Address != nil {
				continue
			}
			if states[i].Address, err = poolAddress(ctx, reader, host.Namespace, state.Pool, address); err != nil {
				return nil, nil, err
			}
		}
		clusterAPIStates, err := claims.EnsureClusterAPI(ctx, host, clusterAPIPools, ipam.AddressUsers{}, writes)
		if err != nil {
			return nil, nil, err
		}
		for i, pool := range clusterAPIPools {
			address, ok := given[pool.Name]
			if ok && clusterAPIStates[i].Address == nil {
				clusterAPIStates[i].Address, clusterAPIStates[i].Failed = clusterAPIAddress(pool, address)
			}
		}
		return append(states, clusterAPIStates...), recorder.Writes, nil
	}
}

// clusterAPIAddress is a given address on a Cluster API IPAM pool, as its
// provider would write it on the IPAddress. Each provider has a pool kind of
// its own, so the prefix and gateway cannot be read from the pool: they are
// given with the address. Otherwise it says what is missing.
func clusterAPIAddress(pool networkdata.Pool, given givenAddress) (*networkdata.Address, string) {
	if given.Prefix < 0 {
		return nil, fmt.Sprintf("--address %s: the prefix of an address of %s is its provider's, which kubectl preprov cannot read "+
			"from a pool of any kind: give it, and the gateway if the pool has one, as %s=%s/<prefix>[,<gateway>]",
			given.text, pool, pool.Name, given.IP)
	}
	address := &networkdata.Address{IP: given.IP.String(), Prefix: given.Prefix}
	if given.Gateway.IsValid() {
		address.Gateway = given.Gateway.String()
	}
	return address, ""
}

// poolAddress is the address IPAM gives for ip from a pool: the prefix,
// gateway and DNS servers of the pool entry (spec.pools[]) that holds ip,
// else of the pool, as test/standins/ipamstandin's newAddress follows Metal3 IPAM.
func poolAddress(ctx context.Context, reader client.Reader, namespace, poolName string, given givenAddress,
) (*networkdata.Address, error) {
	ip := given.IP
	if given.Prefix >= 0 || given.Gateway.IsValid() {
		return nil, fmt.Errorf("--address %s: the prefix and gateway of an address of IPPool %q are the pool's; give the IP alone, %s=%s",
			given.text, poolName, poolName, ip)
	}
	pool := &ipamv1.IPPool{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: poolName}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("IPPool %q is not in namespace %q: give its file with -f, for the prefix, gateway and DNS servers of --address %s=%s",
				poolName, namespace, poolName, ip)
		}
		return nil, err
	}
	for _, entry := range pool.Spec.Pools {
		if !ipam.PoolEntryHolds(entry, ip) {
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
