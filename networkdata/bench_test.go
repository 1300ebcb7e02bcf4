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
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// realisticBondParameters are the scalar bond parameters of our template kind.
var realisticBondParameters = map[string]map[string]intstr.IntOrString{
	"bond0": {"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast")},
}

// realisticTemplate is a dual-stack host: two NICs bonded with LACP, a
// storage VLAN on the bond, static IPv4 and IPv6 from Metal3 pools with
// routes and DNS. The bond and the VLAN take eth1's MAC from an annotation;
// the bond's parameter is an object, as CAPM3's schema requires.
const realisticTemplate = `{
	"links": {
		"ethernets": [
			{"type": "phy", "id": "eth0", "mtu": 9000, "macAddress": {"fromHostInterface": "eno1"}},
			{"type": "phy", "id": "eth1", "mtu": 9000, "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac.example.com/eth1"}}}
		],
		"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondXmitHashPolicy": "layer3+4", "mtu": 9000, "bondLinks": ["eth0", "eth1"],
			"macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac.example.com/eth1"}},
			"parameters": [{"name": "options", "value": {"miimon": 100, "lacp_rate": "fast"}}]}],
		"vlans": [{"id": "storage", "vlanID": 200, "vlanLink": "bond0", "mtu": 9000,
			"macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac.example.com/eth1"}}}]
	},
	"networks": {
		"ipv4": [
			{"id": "prov", "link": "bond0", "ipAddressFromIPPool": "prov-v4", "routes": [
				{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromIPPool": "prov-v4"}, "services": {"dnsFromIPPool": "prov-v4"}},
				{"network": "10.10.0.0", "prefix": 16, "gateway": {"string": "192.168.0.254"}}]},
			{"id": "stor", "link": "storage", "fromPoolRef": {"name": "storage-v4"}}
		],
		"ipv6": [{"id": "prov6", "link": "bond0", "ipAddressFromIPPool": "prov-v6", "routes": [
			{"network": "::", "prefix": 0, "gateway": {"fromIPPool": "prov-v6"}, "services": {"dns": ["2001:4860:4860::8888"]}}]}]
	},
	"services": {"dns": ["8.8.8.8"], "dnsFromIPPool": "prov-v6"}
}`

func BenchmarkRender(b *testing.B) {
	nd := template(b, realisticTemplate)
	host := Host{
		Name: "worker-0", Namespace: "metal3",
		Annotations:    map[string]string{"mac.example.com/eth1": "52:54:00:00:00:02"},
		BootMACAddress: "52:54:00:00:00:01",
	}
	addresses := map[string]Address{
		"prov-v4":    {IP: "192.168.0.10", Prefix: 24, Gateway: "192.168.0.1", DNSServers: []string{"192.168.0.53"}},
		"storage-v4": {IP: "172.16.0.10", Prefix: 24},
		"prov-v6":    {IP: "2001:db8::10", Prefix: 64, Gateway: "2001:db8::1", DNSServers: []string{"2001:db8::53"}},
	}
	bondParams := WithBondParameters(realisticBondParameters)
	if _, err := Render(nd, host, addresses, bondParams); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(nd, host, addresses, bondParams); err != nil {
			b.Fatal(err)
		}
	}
}
