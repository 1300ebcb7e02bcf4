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

package capiipamstandin

import (
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// addressRange is the addresses from first to last, both included.
type addressRange struct {
	first, last netip.Addr
}

// addressSet is a set of addresses as sorted, disjoint ranges (IPv4 before
// IPv6), which is how the provider's poolutil sees a pool.
type addressSet []addressRange

// parseAddresses reads a pool's spec.addresses or spec.excludedAddresses:
// single addresses, CIDRs or ranges "first-last" (poolutil.AddressToIPSet).
func parseAddresses(entries []string) (addressSet, error) {
	var set addressSet
	for _, entry := range entries {
		r, err := parseEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", entry, err)
		}
		set = set.add(r)
	}
	return set, nil
}

func parseEntry(entry string) (addressRange, error) {
	switch {
	case strings.Contains(entry, "-"):
		first, last, _ := strings.Cut(entry, "-")
		from, err := netip.ParseAddr(strings.TrimSpace(first))
		if err != nil {
			return addressRange{}, err
		}
		to, err := netip.ParseAddr(strings.TrimSpace(last))
		if err != nil {
			return addressRange{}, err
		}
		if from.BitLen() != to.BitLen() || to.Less(from) {
			return addressRange{}, fmt.Errorf("%s is not after %s in the same family", to, from)
		}
		return addressRange{from, to}, nil
	case strings.Contains(entry, "/"):
		prefix, err := netip.ParsePrefix(entry)
		if err != nil {
			return addressRange{}, err
		}
		return prefixRange(prefix), nil
	default:
		addr, err := netip.ParseAddr(entry)
		return addressRange{addr, addr}, err
	}
}

// prefixRange is every address of a prefix, its network address first.
func prefixRange(prefix netip.Prefix) addressRange {
	first := prefix.Masked().Addr()
	last := first.AsSlice()
	for bit := prefix.Bits(); bit < first.BitLen(); bit++ {
		last[bit/8] |= 1 << (7 - bit%8)
	}
	lastAddr, _ := netip.AddrFromSlice(last)
	return addressRange{first, lastAddr}
}

// add returns the set with r added, ranges merged and sorted.
func (s addressSet) add(r addressRange) addressSet {
	merged := append(slices.Clone(s), r)
	slices.SortFunc(merged, func(a, b addressRange) int { return a.first.Compare(b.first) })
	var out addressSet
	for _, next := range merged {
		if n := len(out); n > 0 && out[n-1].last.BitLen() == next.first.BitLen() &&
			(!out[n-1].last.Less(next.first) || out[n-1].last.Next() == next.first) {
			if out[n-1].last.Less(next.last) {
				out[n-1].last = next.last
			}
			continue
		}
		out = append(out, next)
	}
	return out
}

// remove returns the set without the addresses of r.
func (s addressSet) remove(r addressRange) addressSet {
	var out addressSet
	for _, kept := range s {
		if kept.last.Less(r.first) || r.last.Less(kept.first) || kept.first.BitLen() != r.first.BitLen() {
			out = append(out, kept)
			continue
		}
		if kept.first.Less(r.first) {
			out = append(out, addressRange{kept.first, r.first.Prev()})
		}
		if r.last.Less(kept.last) {
			out = append(out, addressRange{r.last.Next(), kept.last})
		}
	}
	return out
}

func (s addressSet) contains(addr netip.Addr) bool {
	for _, r := range s {
		if !addr.Less(r.first) && !r.last.Less(addr) {
			return true
		}
	}
	return false
}

// count is the number of addresses, math.MaxInt when more (poolutil.IPSetCount).
func (s addressSet) count() int {
	total := new(big.Int)
	for _, r := range s {
		size := new(big.Int).Sub(new(big.Int).SetBytes(r.last.AsSlice()), new(big.Int).SetBytes(r.first.AsSlice()))
		total.Add(total, size.Add(size, big.NewInt(1)))
	}
	if total.IsInt64() && total.Int64() <= math.MaxInt {
		return int(total.Int64())
	}
	return math.MaxInt
}

// lowestFree is the lowest address of the set not in inUse
// (poolutil.FindFreeAddress).
func (s addressSet) lowestFree(inUse map[netip.Addr]bool) (netip.Addr, bool) {
	for _, r := range s {
		for addr := r.first; ; addr = addr.Next() {
			if !inUse[addr] {
				return addr, true
			}
			if addr == r.last {
				break
			}
		}
	}
	return netip.Addr{}, false
}

// poolAddresses is what a pool can give (poolutil.PoolSpecToIPSet): its
// addresses without the excluded ones, without the network address (and,
// for IPv4, the broadcast address) of the prefix around its lowest address
// unless allocateReservedIPAddresses, and without the gateway.
func poolAddresses(spec *inclusterv1alpha2.InClusterIPPoolSpec) (addressSet, error) {
	set, err := parseAddresses(spec.Addresses)
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, nil
	}
	excluded, err := parseAddresses(spec.ExcludedAddresses)
	if err != nil {
		return nil, err
	}
	lowest := set[0].first
	for _, r := range excluded {
		set = set.remove(r)
	}
	if !spec.AllocateReservedIPAddresses {
		prefix := netip.PrefixFrom(lowest, spec.Prefix)
		if !prefix.IsValid() {
			return nil, fmt.Errorf("prefix %d does not fit %s", spec.Prefix, lowest)
		}
		subnet := prefixRange(prefix)
		set = set.remove(addressRange{subnet.first, subnet.first})
		if lowest.Is4() {
			set = set.remove(addressRange{subnet.last, subnet.last})
		}
	}
	if spec.Gateway != "" {
		gateway, err := netip.ParseAddr(spec.Gateway)
		if err != nil {
			return nil, fmt.Errorf("gateway %q: %w", spec.Gateway, err)
		}
		set = set.remove(addressRange{gateway, gateway})
	}
	return set, nil
}
