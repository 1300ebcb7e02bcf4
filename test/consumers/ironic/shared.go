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

package ironic

// What test/consumers/agent, which registers hosts with Ironic 29 from the
// Debian 13 root, shares with this package's Ironic 21.4.

// RedfishDriverInfo is BMO's driver_info of a redfish-virtualmedia BMC
// address (redfishDriverInfo).
func RedfishDriverInfo(host VirtualMediaHost) (map[string]any, error) {
	return redfishDriverInfo(host)
}

// AsRefusal turns an Ironic API error into a RefusalError holding Ironic's
// message, and leaves other errors as they are (asRefusal).
func AsRefusal(err error) error {
	return asRefusal(err)
}
