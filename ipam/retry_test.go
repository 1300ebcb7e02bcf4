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
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// tinyPool is 192.0.2.10-11, with the given pre-allocations.
func tinyPool(preAllocations map[string]ipamv1.IPAddressStr) *ipamv1.IPPool {
	return &ipamv1.IPPool{Spec: ipamv1.IPPoolSpec{
		Pools:          []ipamv1.Pool{{Start: ptr.To(ipamv1.IPAddressStr("192.0.2.10")), End: ptr.To(ipamv1.IPAddressStr("192.0.2.11"))}},
		PreAllocations: preAllocations,
	}}
}

// usageOf is a pool's usage with these IPAddresses (claim name to address)
// and pre-allocations, as usage reads them.
func usageOf(pool *ipamv1.IPPool, addresses map[string]string) poolUsage {
	usage := poolUsage{addresses: len(addresses), used: map[netip.Addr]bool{}, byClaim: map[string]netip.Addr{}}
	for _, ip := range pool.Spec.PreAllocations {
		usage.used[netip.MustParseAddr(string(ip))] = true
	}
	for claim, ip := range addresses {
		usage.used[netip.MustParseAddr(ip)] = true
		usage.byClaim[claim] = netip.MustParseAddr(ip)
	}
	return usage
}

// The address IPAM would give a claim is computed as IPAM's createAddress
// and allocateAddress compute it.
func TestFreeAddressAsIPAMComputesIt(t *testing.T) {
	tests := []struct {
		name           string
		preAllocations map[string]ipamv1.IPAddressStr
		addresses      map[string]string
		skip           []string
		want           string
	}{
		{name: "first address not allocated", addresses: map[string]string{"a-pool": "192.0.2.10"}, want: "192.0.2.11"},
		{name: "exhausted", addresses: map[string]string{"a-pool": "192.0.2.10", "b-pool": "192.0.2.11"}},
		{
			name: "an address left behind a deleted claim counts as allocated",
			// Its claim is gone, but IPAM keeps the address for that name.
			addresses: map[string]string{"gone-pool": "192.0.2.10", "b-pool": "192.0.2.11"},
		},
		{
			name:      "the claim's name already has an address: IPAM hands it over",
			addresses: map[string]string{"c-pool": "192.0.2.10", "b-pool": "192.0.2.11"},
			want:      "192.0.2.10",
		},
		{
			name:           "another name's pre-allocation is taken",
			preAllocations: map[string]ipamv1.IPAddressStr{"b-pool": "192.0.2.11"},
			addresses:      map[string]string{"a-pool": "192.0.2.10"},
		},
		{
			name:           "the claim's pre-allocation in the pool's range, used or not",
			preAllocations: map[string]ipamv1.IPAddressStr{"c-pool": "192.0.2.10"},
			addresses:      map[string]string{"a-pool": "192.0.2.10"},
			want:           "192.0.2.10",
		},
		{
			name:           "the claim's pre-allocation outside the pool's ranges",
			preAllocations: map[string]ipamv1.IPAddressStr{"c-pool": "198.51.100.7"},
		},
		{name: "a refused address is skipped", skip: []string{"192.0.2.10"}, want: "192.0.2.11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := tinyPool(tt.preAllocations)
			free, found := usageOf(pool, tt.addresses).free(pool, "c-pool", tt.skip)
			assert.Equal(t, tt.want != "", found)
			if found {
				assert.Equal(t, tt.want, free)
			}
		})
	}
}

func TestDecideRetry(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	failedClaim := func(annotations map[string]string) *ipamv1.IPClaim {
		return &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{
			Name: "c-pool", CreationTimestamp: metav1.NewTime(created), Annotations: annotations,
		}}
	}
	note := func(n retryNote) string {
		value, err := json.Marshal(n)
		require.NoError(t, err)
		return string(value)
	}
	exhausted := map[string]string{"a-pool": "192.0.2.10", "b-pool": "192.0.2.11"}
	oneFree := map[string]string{"a-pool": "192.0.2.10"}
	tests := []struct {
		name           string
		annotations    map[string]string
		preAllocations map[string]ipamv1.IPAddressStr
		addresses      map[string]string
		queued         bool
		after          time.Duration
		want           retryDecision
	}{
		{
			// Older failed claims of the pool take the free address first.
			name:        "an address is free but the claim's turn has not come: it waits",
			annotations: map[string]string{preprovv1.PoolAddressesAnnotation: "2"},
			addresses:   oneFree,
			queued:      true,
			want:        retryDecision{queued: true},
		},
		{
			name:      "not in turn, first seen: the count is recorded",
			addresses: oneFree,
			queued:    true,
			want:      retryDecision{record: true, queued: true},
		},
		{
			name:        "a negative count, hand-edited, is written again",
			annotations: map[string]string{preprovv1.PoolAddressesAnnotation: "-3"},
			addresses:   exhausted,
			want:        retryDecision{record: true},
		},
		{
			name:        "attempt 0, hand-edited: the first attempt, backed off",
			annotations: map[string]string{preprovv1.RetryAnnotation: `{"address":"192.0.2.11","attempt":0}`},
			addresses:   oneFree,
			want:        retryDecision{after: retryBackoff},
		},
		{
			name:        "a negative attempt, hand-edited: the first attempt, backed off",
			annotations: map[string]string{preprovv1.RetryAnnotation: `{"address":"192.0.2.11","attempt":-9223372036854775808}`},
			addresses:   oneFree,
			after:       time.Hour,
			want:        retryDecision{retry: true, note: retryNote{Address: "192.0.2.11", Attempt: 2}},
		},
		{
			name:        "a huge attempt, hand-edited: the last attempt",
			annotations: map[string]string{preprovv1.RetryAnnotation: `{"address":"192.0.2.11","attempt":9223372036854775807}`},
			addresses:   oneFree,
			want:        retryDecision{record: true, refused: "192.0.2.11"},
		},
		{
			name:        "a non-numeric attempt: no note",
			annotations: map[string]string{preprovv1.RetryAnnotation: `{"address":"192.0.2.11","attempt":"x"}`},
			addresses:   oneFree,
			want:        retryDecision{retry: true, note: retryNote{Address: "192.0.2.11", Attempt: 1}},
		},

		{
			name:      "exhausted, first seen: the count is recorded",
			addresses: exhausted,
			want:      retryDecision{record: true},
		},
		{
			name:        "exhausted, count recorded: nothing to do",
			annotations: map[string]string{preprovv1.PoolAddressesAnnotation: "2"},
			addresses:   exhausted,
		},
		{
			// Claims made together all recorded 0 addresses at creation;
			// the count is now taken when the failure is seen.
			name:        "an address is free: retry for it",
			annotations: map[string]string{preprovv1.PoolAddressesAnnotation: "0"},
			addresses:   oneFree,
			want:        retryDecision{retry: true, note: retryNote{Address: "192.0.2.11", Attempt: 1}},
		},
		{
			name:        "fewer addresses than when the failure was seen, none free for us: retry",
			annotations: map[string]string{preprovv1.PoolAddressesAnnotation: "2"},
			// The freed address is pre-allocated to somebody else.
			preAllocations: map[string]ipamv1.IPAddressStr{"b-pool": "192.0.2.11"},
			addresses:      map[string]string{"a-pool": "192.0.2.10"},
			want:           retryDecision{retry: true, note: retryNote{Attempt: 1}},
		},
		{
			name:        "a retry for the same address refused: backed off",
			annotations: map[string]string{preprovv1.RetryAnnotation: note(retryNote{Address: "192.0.2.11", Attempt: 1})},
			addresses:   oneFree,
			after:       time.Second,
			want:        retryDecision{after: time.Second},
		},
		{
			name:        "a retry for the same address refused, backoff over: once more",
			annotations: map[string]string{preprovv1.RetryAnnotation: note(retryNote{Address: "192.0.2.11", Attempt: 2})},
			addresses:   oneFree,
			after:       4 * time.Second,
			want:        retryDecision{retry: true, note: retryNote{Address: "192.0.2.11", Attempt: 3}},
		},
		{
			// IPAM sees a holder of the address we do not: no endless loop.
			name:        "the same address refused as often as allowed: it stays failed",
			annotations: map[string]string{preprovv1.RetryAnnotation: note(retryNote{Address: "192.0.2.11", Attempt: retriesOfOneAddress})},
			addresses:   oneFree,
			after:       time.Hour,
			want:        retryDecision{record: true, refused: "192.0.2.11"},
		},
		{
			name: "refused, then an address is released: retry",
			annotations: map[string]string{
				preprovv1.RetryAnnotation:         note(retryNote{Address: "192.0.2.11", Attempt: retriesOfOneAddress}),
				preprovv1.PoolAddressesAnnotation: "1",
			},
			addresses: map[string]string{},
			want:      retryDecision{retry: true, note: retryNote{Address: "192.0.2.10", Attempt: 1}},
		},
		{
			name: "another address than the refused ones is free: retry for it",
			annotations: map[string]string{
				preprovv1.RetryAnnotation: note(retryNote{Address: "192.0.2.11", Attempt: 1, Refused: []string{"192.0.2.10"}}),
			},
			addresses: map[string]string{},
			after:     time.Hour,
			want: retryDecision{retry: true, note: retryNote{
				Address: "192.0.2.11", Attempt: 2, Refused: []string{"192.0.2.10"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := tinyPool(tt.preAllocations)
			got := decideRetry(failedClaim(tt.annotations), pool, usageOf(pool, tt.addresses), !tt.queued, created.Add(tt.after))
			assert.Equal(t, tt.want, got)
		})
	}
}

// A retry note is an annotation anyone can edit: whatever it holds, it is
// read as a note of the right shape, or as none.
func TestReadRetryNote(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  retryNote
		bad   bool
	}{
		{name: "a note we wrote", value: `{"address":"192.0.2.11","attempt":2,"refused":["192.0.2.10"]}`,
			want: retryNote{Address: "192.0.2.11", Attempt: 2, Refused: []string{"192.0.2.10"}}},
		{name: "not JSON", value: "three", bad: true},
		{name: "not an object", value: `[1,2]`, bad: true},
		{name: "attempt not a number", value: `{"address":"192.0.2.11","attempt":"2"}`, bad: true},
		{name: "attempt beyond int64", value: `{"address":"192.0.2.11","attempt":1e40}`, bad: true},
		{name: "no address", value: `{"attempt":2}`, bad: true},
		{name: "address not an IP", value: `{"address":"node-0","attempt":2}`, bad: true},
		{name: "attempt 0", value: `{"address":"192.0.2.11","attempt":0}`, want: retryNote{Address: "192.0.2.11", Attempt: 1}, bad: true},
		{name: "attempt negative", value: `{"address":"192.0.2.11","attempt":-4}`, want: retryNote{Address: "192.0.2.11", Attempt: 1}, bad: true},
		{name: "attempt huge", value: `{"address":"192.0.2.11","attempt":99999999999}`,
			want: retryNote{Address: "192.0.2.11", Attempt: retriesOfOneAddress}, bad: true},
		{name: "IPv6 spelled long", value: `{"address":"2001:db8:0:0::1","attempt":1,"refused":["2001:DB8::2","x","2001:db8::2"]}`,
			want: retryNote{Address: "2001:db8::1", Attempt: 1, Refused: []string{"2001:db8::2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{preprovv1.RetryAnnotation: tt.value}}}
			got, problem := readRetryNote(claim)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.bad, problem != "", "problem: %q", problem)
		})
	}
}

// Whatever the annotations of a failed claim hold, deciding on it never
// panics, never backs off longer than the last backoff, and never makes a
// claim with an attempt outside 1..retriesOfOneAddress.
func FuzzDecideRetry(f *testing.F) {
	f.Add(`{"address":"192.0.2.11","attempt":0}`, "1", int64(0))
	f.Add(`{"address":"192.0.2.11","attempt":-1}`, "-1", int64(1))
	f.Add(`{"address":"192.0.2.10","attempt":9223372036854775807,"refused":["192.0.2.11"]}`, "99999999999999999999", int64(5))
	f.Add(`{"address":"::1","attempt":"x"}`, "x", int64(-5))
	f.Fuzz(func(t *testing.T, note, recorded string, afterSeconds int64) {
		created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		claim := &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{
			Name: "c-pool", CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{preprovv1.RetryAnnotation: note, preprovv1.PoolAddressesAnnotation: recorded},
		}}
		pool := tinyPool(nil)
		for _, addresses := range []map[string]string{{}, {"a-pool": "192.0.2.10"}, {"a-pool": "192.0.2.10", "b-pool": "192.0.2.11"}} {
			got := decideRetry(claim, pool, usageOf(pool, addresses), true, created.Add(time.Duration(afterSeconds)*time.Second))
			assert.LessOrEqual(t, got.after, retryBackoff<<(retriesOfOneAddress-1))
			if got.retry {
				assert.GreaterOrEqual(t, got.note.Attempt, 1)
				assert.LessOrEqual(t, got.note.Attempt, retriesOfOneAddress)
			}
		}
	})
}

// The count of free addresses stops at its limit: a large range is not
// walked to its end.
func TestFreeCount(t *testing.T) {
	pool := tinyPool(map[string]ipamv1.IPAddressStr{"b-pool": "192.0.2.11"})
	assert.Equal(t, 0, usageOf(pool, map[string]string{"a-pool": "192.0.2.10"}).freeCount(pool, 5))
	assert.Equal(t, 1, usageOf(pool, nil).freeCount(pool, 5))
	wide := &ipamv1.IPPool{Spec: ipamv1.IPPoolSpec{Pools: []ipamv1.Pool{{Subnet: ptr.To(ipamv1.IPSubnetStr("10.0.0.0/8"))}}}}
	assert.Equal(t, 3, usageOf(wide, nil).freeCount(wide, 3))
}
