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
	"encoding/json"
	"fmt"
	"net"
)

// Gateways are the gateway addresses a network data document routes
// through, each with the prefix of its network (192.168.111.1/24): what
// the provisioning network must hold to be the hosts' router. This is the
// network's side, set up by whoever runs it, never the host's.
func Gateways(networkData []byte) ([]string, error) {
	var document struct {
		Networks []struct {
			ID      string `json:"id"`
			Netmask string `json:"netmask"`
			Routes  []struct {
				Gateway string `json:"gateway"`
			} `json:"routes"`
		} `json:"networks"`
	}
	if err := json.Unmarshal(networkData, &document); err != nil {
		return nil, fmt.Errorf("network data is not JSON: %w", err)
	}
	var gateways []string
	for _, network := range document.Networks {
		for _, route := range network.Routes {
			mask := net.IPMask(net.ParseIP(network.Netmask))
			if ip4 := net.ParseIP(network.Netmask).To4(); ip4 != nil {
				mask = net.IPMask(ip4)
			}
			ones, bits := mask.Size()
			if bits == 0 || net.ParseIP(route.Gateway) == nil {
				return nil, fmt.Errorf("network %s: gateway %q or netmask %q is not an address", network.ID, route.Gateway, network.Netmask)
			}
			gateways = append(gateways, fmt.Sprintf("%s/%d", route.Gateway, ones))
		}
	}
	return gateways, nil
}
