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

// Package networkdata renders the OpenStack network_data document of a
// BareMetalHost from a CAPM3 Metal3DataTemplate's spec.networkData and the
// addresses claimed from Metal3 IPAM IPPools and Cluster API IPAM pools.
//
// The document is, as data, the one CAPM3's Metal3Data controller renders
// (renderNetworkData in CAPM3's baremetal/metal3data_manager.go, v1.13): the
// same keys, list order, netmask spelling and empty lists, plus what Ironic's
// API requires. BMO sends the document to Ironic as the node's network_data,
// and Ironic refuses the node (HTTP 400) unless the document is valid under
// its network_data schema; so Render only returns valid documents. It
// differs from CAPM3 only there and where no Machine exists yet:
//   - every network carries network_id (its id), which the schema requires
//     and CAPM3 never writes;
//   - what CAPM3 would render but the schema refuses is an input error
//     instead: a link without macAddress, a bond without bondLinks, a route
//     without gateway or network, a /32 IPv4 netmask, an address of the wrong
//     family or in a spelling the schema does not take;
//   - a route gateway fromPoolAnnotation on a DHCP or SLAAC network is an
//     input error: CAPM3 claims no address from that pool there and fails;
//   - bond parameters may also come as scalars (WithBondParameters), which
//     the ramdisk's and the OS's network tools read and CAPM3 cannot give;
//   - before provisioning the only object the template may read is the
//     BareMetalHost, and a host that was not inspected yet has no NIC list,
//     so fromHostInterface can only fall back to the boot MAC.
//
// docs/network-data.md lists these differences for users.
//
// The package is pure: no Kubernetes client, no I/O. Compile checks a
// template against a host once; the Plan's Pools and ClusterAPIPools tell
// the caller which pools to claim addresses from, and its Render produces
// the bytes.
//
// Layer: pure, above api/v1beta1 only in the layering; it imports nothing of
// this module.
package networkdata
