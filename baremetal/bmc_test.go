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

package baremetal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBootNeedsDHCP(t *testing.T) {
	tests := []struct {
		address string
		want    string
	}{
		// Network boot (PXE/iPXE): BMO's RequiresProvisioningNetwork is true.
		{address: "ipmi://192.168.122.1:6233", want: "ipmi"},
		{address: "ipmi:192.168.122.1", want: "ipmi"},
		{address: "IPMI://192.168.122.1", want: "ipmi"},
		{address: "libvirt://192.168.122.1:6233/?abc=def", want: "libvirt"},
		{address: "redfish://192.168.122.1/redfish/v1/Systems/1", want: "redfish"},
		{address: "redfish+https://[fe80::fc33:62ff:fe83:8a76]:6233/foo", want: "redfish+https"},
		{address: "idrac-redfish+http://192.168.122.1", want: "idrac-redfish+http"},
		{address: "ilo5-redfish://192.168.122.1", want: "ilo5-redfish"},
		// No scheme is IPMI, as in BMO.
		{address: "192.168.122.1", want: "ipmi"},
		{address: "192.168.122.1:6233", want: "ipmi"},
		{address: "[fe80::fc33:62ff:fe83:8a76]:6233", want: "ipmi"},
		{address: "bmc.example.com", want: "ipmi"},
		// Virtual media and UEFI HTTP boot: false in BMO.
		{address: "redfish-virtualmedia://192.168.122.1/redfish/v1/Systems/1"},
		{address: "redfish-virtualmedia+https://192.168.122.1/redfish/v1/Systems/1"},
		{address: "idrac-virtualmedia+https://192.168.122.1/redfish/v1/Systems/System.Embedded.1"},
		{address: "ilo5-virtualmedia://192.168.122.1/redfish/v1/Systems/1"},
		{address: "redfish-uefihttp://192.168.122.1/redfish/v1/Systems/1"},
		// Addresses BMO refuses: it reports them itself.
		{address: ""},
		{address: "ilo4://192.168.122.1"},
		{address: "irmc://192.168.122.1"},
		{address: "bmc.example.com:notaport:x"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, bootNeedsDHCP(tt.address), tt.address)
	}
}
