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

package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnExampleHostIsRenderedWithItsPoolsFirstAddresses(t *testing.T) {
	host, err := LoadExampleHost("ipv6", "dual-stack-0", "dual-stack", 2)
	require.NoError(t, err)
	assert.Equal(t, "00:5c:52:31:3d:11", host.BootMACAddress)
	assert.Equal(t, []string{"192.168.115.1/24", "2001:db8::1/64"}, host.Routers, "the routers come from the pools")
	document, err := host.Render(host.RendererHost(), host.Addresses)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.168.115.102", "2001:db8::102"}, host.IPs(), "the third host of each pool")
	assert.Contains(t, string(document), `"ip_address":"192.168.115.102"`)
	assert.Contains(t, string(document), `"ip_address":"2001:db8::102"`)

	_, err = LoadExampleHost("ipv6", "dual-stack-0", "no-such-template", 0)
	assert.ErrorContains(t, err, "no Metal3PreprovisioningTemplate no-such-template")
}

func TestAnExamplesRoutersAreItsPoolsGateways(t *testing.T) {
	routers, err := ExampleRouters("ipv6")
	require.NoError(t, err)
	assert.Equal(t, []string{"192.168.115.1/24", "2001:db8::1/64"}, routers)
}
