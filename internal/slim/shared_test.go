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

package slim

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
	"unsafe"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// What the API server sends for a host's claim, its address and its
// Secret, as the fleet benchmark makes them (with IPAM's stand-in).
const (
	claimJSON = `{"apiVersion":"ipam.metal3.io/v1alpha1","kind":"IPClaim","metadata":{` +
		`"annotations":{"preprovisioning.metal3.io/pool-generation":"1"},"creationTimestamp":"2026-12-07T04:56:19Z",` +
		`"finalizers":["ipclaim.ipam.metal3.io"],"generation":1,"labels":{"preprovisioning.metal3.io/managed":"true"},` +
		`"managedFields":[{"manager":"manager","operation":"Update","apiVersion":"ipam.metal3.io/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:pool":{}}}}],` +
		`"name":"host-%05d-storage","namespace":"bench-controller","ownerReferences":[{"apiVersion":"metal3.io/v1alpha1",` +
		`"kind":"BareMetalHost","name":"host-%05d","uid":"d0f00a5c-1380-4190-ada6-f2b4f0d%05d"}],"resourceVersion":"3935",` +
		`"uid":"c68366f9-be69-4ff0-9a7e-3b03e65%05d"},"spec":{"pool":{"name":"storage","namespace":"bench-controller"}},` +
		`"status":{"address":{"name":"storage-10-20-0-%d","namespace":"bench-controller"}}}`
	addressJSON = `{"apiVersion":"ipam.metal3.io/v1alpha1","kind":"IPAddress","metadata":{"creationTimestamp":"2026-12-07T04:56:17Z",` +
		`"finalizers":["ipaddress.ipam.metal3.io"],"generation":1,"labels":{"preprovisioning.metal3.io/managed":"true"},` +
		`"name":"storage-10-20-0-%d","namespace":"bench-controller","ownerReferences":[{"apiVersion":"ipam.metal3.io/v1alpha1",` +
		`"kind":"IPPool","name":"storage","uid":"57b42b7e-1316-4156-b2f9-131245a3a3ae"},{"apiVersion":"ipam.metal3.io/v1alpha1",` +
		`"kind":"IPClaim","name":"host-%05d-storage","uid":"7b8ce156-a885-4e07-97d7-9797f%07d"}],"resourceVersion":"3620",` +
		`"uid":"da6c3299-3941-47c0-8db0-a14f81b%05d"},"spec":{"address":"10.20.0.%d","claim":{"name":"host-%05d-storage",` +
		`"namespace":"bench-controller"},"dnsServers":["192.0.2.53"],"gateway":"10.20.0.1","pool":{"name":"storage",` +
		`"namespace":"bench-controller"},"prefix":16}}`
)

func decodedClaim(tb testing.TB, i int) *ipamv1.IPClaim {
	tb.Helper()
	claim := &ipamv1.IPClaim{}
	require.NoError(tb, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(fmt.Sprintf(claimJSON, i, i, i, i, i)), claim))
	return claim
}

func decodedAddress(tb testing.TB, i int) *ipamv1.IPAddress {
	tb.Helper()
	address := &ipamv1.IPAddress{}
	require.NoError(tb, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(fmt.Sprintf(addressJSON, i, i, i, i, i, i)), address))
	return address
}

// decodedSecret is a host's Secret as client-go decodes it: from protobuf.
func decodedSecret(tb testing.TB, i int) *corev1.Secret {
	tb.Helper()
	written := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("host-%05d-preprov-networkdata", i), Namespace: "bench-controller",
			UID: "90bd1ddf-80be-4c95-8b51-1d9a7e716a40", ResourceVersion: "3972",
			Labels:      map[string]string{"environment.metal3.io": "baremetal", "preprovisioning.metal3.io/managed": "true"},
			Annotations: map[string]string{"preprovisioning.metal3.io/written-for": fmt.Sprintf("host-%05d", i)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "metal3.io/v1alpha1", Kind: "BareMetalHost", Name: fmt.Sprintf("host-%05d", i),
				UID: "d0f00a5c-1380-4190-ada6-f2b4f0dba6bd",
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"networkData": []byte(strings.Repeat("x", 900))},
	}
	wire, err := written.Marshal()
	require.NoError(tb, err)
	secret := &corev1.Secret{}
	require.NoError(tb, secret.Unmarshal(wire))
	return secret
}

func TestSharedKeepsEveryFieldButManagedFields(t *testing.T) {
	for _, tt := range []struct {
		name      string
		decoded   runtime.Object
		transform func(any) (any, error)
	}{
		{name: "IPClaim", decoded: decodedClaim(t, 1), transform: Claim},
		{name: "IPAddress", decoded: decodedAddress(t, 1), transform: Address},
		{name: "Secret", decoded: decodedSecret(t, 1), transform: Shared},
		{name: "IPClaim through Shared", decoded: decodedClaim(t, 2), transform: Shared},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.decoded.DeepCopyObject()
			want.(metav1.Object).SetManagedFields(nil)
			cached, err := tt.transform(tt.decoded)
			require.NoError(t, err)
			assert.Equal(t, want, cached)
			again, err := tt.transform(cached)
			require.NoError(t, err)
			assert.Equal(t, want, again, "a transform may see an object it already transformed")
		})
	}
	other := &bmov1alpha1.BareMetalHost{}
	for _, transform := range []func(any) (any, error){Claim, Address} {
		passed, err := transform(other)
		require.NoError(t, err)
		assert.Same(t, other, passed)
	}
}

func TestEqualMetadataIsOneCopy(t *testing.T) {
	first, err := Claim(decodedClaim(t, 1))
	require.NoError(t, err)
	second, err := Claim(decodedClaim(t, 2))
	require.NoError(t, err)
	a, b := first.(*ipamv1.IPClaim), second.(*ipamv1.IPClaim)

	sameMap := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	sameString := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	assert.True(t, sameMap(a.Labels, b.Labels), "both claims' labels are one map")
	assert.True(t, sameMap(a.Annotations, b.Annotations), "both claims' annotations are one map")
	assert.True(t, sameString(a.Namespace, b.Namespace))
	assert.True(t, sameString(a.Finalizers[0], b.Finalizers[0]))
	assert.True(t, sameString(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind))
	assert.True(t, sameString(a.Spec.Pool.Name, b.Spec.Pool.Name))
	assert.True(t, sameString(a.APIVersion, b.APIVersion))
	assert.False(t, sameString(a.Name, b.Name), "each object's own name is its own")

	secret, err := Shared(decodedSecret(t, 1))
	require.NoError(t, err)
	address, err := Address(decodedAddress(t, 1))
	require.NoError(t, err)
	otherAddress, err := Address(decodedAddress(t, 2))
	require.NoError(t, err)
	pool, otherPool := address.(*ipamv1.IPAddress).OwnerReferences[0], otherAddress.(*ipamv1.IPAddress).OwnerReferences[0]
	assert.True(t, sameString(pool.Name, otherPool.Name) && sameString(string(pool.UID), string(otherPool.UID)),
		"every address of a pool names it with one string")
	assert.True(t, sameString(secret.(*corev1.Secret).OwnerReferences[0].Kind, a.OwnerReferences[0].Kind))
	assert.False(t, sameString(secret.(*corev1.Secret).OwnerReferences[0].Name, a.OwnerReferences[0].Name),
		"a host's name is left to the few objects it owns")
	assert.False(t, sameMap(secret.(*corev1.Secret).Labels, a.Labels), "other labels, other map")
}

func TestMapTableEmptiesWhenFull(t *testing.T) {
	table := mapTable{limit: 2}
	first, second := map[string]string{"a": "1"}, map[string]string{"b": "2"}
	table.share(first)
	table.share(second)
	firstAgain := map[string]string{"a": "1"}
	assert.Equal(t, firstAgain, table.share(firstAgain))
	third := map[string]string{"c": "3"}
	table.share(third)
	assert.Len(t, table.byContent, 1, "full at two maps: emptied before the third went in")
	laterFirst := map[string]string{"a": "1"}
	shared := table.share(laterFirst)
	assert.Equal(t, reflect.ValueOf(laterFirst).UnsafePointer(), reflect.ValueOf(shared).UnsafePointer(),
		"a set seen before the table was emptied is taken anew")
}

func TestMapTableTakesOnlySmallSetsAndTellsEveryOneApart(t *testing.T) {
	table := mapTable{limit: 10}
	large := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", maxSharedContent)}
	table.share(large)
	assert.Empty(t, table.byContent, "a set over maxSharedContent is left as it is")
	assert.Nil(t, table.share(nil))
	assert.Empty(t, table.byContent)

	for _, pair := range [][2]map[string]string{
		{{"a": "b:c"}, {"a:b": "c"}},
		{{"a": "1", "b": "2"}, {"a": "12"}},
		{{"a": ""}, {"": "a"}},
	} {
		kept := table.share(pair[0])
		other := table.share(pair[1])
		assert.Equal(t, pair[1], other, "%v is not %v", pair[1], pair[0])
		assert.NotEqual(t, reflect.ValueOf(kept).UnsafePointer(), reflect.ValueOf(other).UnsafePointer())
	}
}

// BenchmarkCachedCopy reports the bytes each cached copy of the objects a
// host brings in holds: with only its managed fields dropped, and shared.
func BenchmarkCachedCopy(b *testing.B) {
	for _, tt := range []struct {
		name      string
		decode    func(testing.TB, int) runtime.Object
		transform func(any) (any, error)
	}{
		{name: "IPClaim", decode: func(tb testing.TB, i int) runtime.Object { tb.Helper(); return decodedClaim(tb, i) }, transform: Claim},
		{name: "IPAddress", decode: func(tb testing.TB, i int) runtime.Object { tb.Helper(); return decodedAddress(tb, i) }, transform: Address},
		{name: "Secret", decode: func(tb testing.TB, i int) runtime.Object { tb.Helper(); return decodedSecret(tb, i) }, transform: Shared},
	} {
		// Stripped is how the cache kept them before they were shared.
		for _, kept := range []string{"stripped", "shared"} {
			b.Run(tt.name+"/"+kept, func(b *testing.B) {
				objects := make([]any, 0, b.N)
				var before, after goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				for i := range b.N {
					var object any = tt.decode(b, i)
					if kept == "shared" {
						object, _ = tt.transform(object)
					} else {
						object.(metav1.Object).SetManagedFields(nil)
					}
					objects = append(objects, object)
				}
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "retained-B/object")
				goruntime.KeepAlive(objects)
			})
		}
	}
}
