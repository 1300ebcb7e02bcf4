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

// Address is what one IPAddress gives the host: spec.address, spec.prefix,
// spec.gateway and, from Metal3 IPAM only, spec.dnsServers (a Cluster API
// IPAddress has none, and CAPM3 renders none for its pool).
type Address struct {
	IP         string
	Prefix     int
	Gateway    string // may be empty
	DNSServers []string
}

// NIC is one entry of BareMetalHost status.hardware.nics.
type NIC struct{ Name, MAC string }

// Host is what the renderer knows about the BareMetalHost.
type Host struct {
	Name, Namespace string
	Annotations     map[string]string
	BootMACAddress  string
	NICs            []NIC // empty before inspection
}
