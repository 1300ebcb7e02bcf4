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

package ramdiskhost

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGatewaysCarryTheirNetworksPrefix(t *testing.T) {
	t.Parallel()
	gateways, err := Gateways([]byte(`{"networks":[
	  {"id":"v4","netmask":"255.255.255.0","routes":[{"gateway":"192.168.111.1"}]},
	  {"id":"v6","netmask":"ffff:ffff:ffff:ffff::","routes":[{"gateway":"2001:db8::1"}]},
	  {"id":"slaac","type":"ipv6_slaac"}]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"192.168.111.1/24", "2001:db8::1/64"}, gateways)

	_, err = Gateways([]byte(`{"networks":[{"id":"v4","netmask":"","routes":[{"gateway":"192.168.111.1"}]}]}`))
	assert.ErrorContains(t, err, `network v4: gateway "192.168.111.1" or netmask "" is not an address`)
}
