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

import (
	"fmt"
	"net"
	"strconv"
)

// configFile is Metal3's ironic-image configuration (ironic.conf.j2 with
// its defaults: fast track, agent inspection, noop network, no DHCP) for
// one process with the API and the conductor on loopback, sqlite and no
// message bus, and the paths of the root. Beside the redfish hardware type
// and the interfaces BMO picks for a redfish-virtualmedia:// BMC, fake
// hardware and its fake interfaces are enabled: a node created with driver
// fake-hardware and no interfaces (Node) gets fake ones and reaches no BMC
// (fake-hardware is exempt from the check of its interfaces, so the
// default inspect interface agent does not stop it). The URLs the ramdisk
// is given are on the provisioning network (address), which a relay
// forwards to loopback.
func configFile(port int, httpURL, address string) string {
	return fmt.Sprintf(`[DEFAULT]
auth_strategy = noauth
debug = true
rpc_transport = none
host = localhost
use_stderr = true
hash_ring_algorithm = sha256
my_ip = %[3]s
state_path = %[5]s/state
tempdir = %[5]s/tmp
isolinux_bin = /usr/lib/ISOLINUX/isolinux.bin
ldlinux_c32 = /usr/lib/syslinux/modules/bios/ldlinux.c32
enabled_hardware_types = fake-hardware,redfish
default_inspect_interface = agent
default_network_interface = noop
enabled_bios_interfaces = no-bios,redfish
enabled_boot_interfaces = fake,redfish-virtual-media
enabled_console_interfaces = no-console
enabled_deploy_interfaces = fake,direct,ramdisk,custom-agent
enabled_firmware_interfaces = no-firmware,redfish
enabled_inspect_interfaces = no-inspect,agent,redfish
enabled_management_interfaces = fake,redfish
enabled_network_interfaces = noop
enabled_power_interfaces = fake,redfish
enabled_raid_interfaces = no-raid,agent,redfish
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor,redfish

[api]
host_ip = 127.0.0.1
port = %[1]d

[conductor]
node_history = False

[database]
connection = sqlite:///%[5]s/ironic.db
sqlite_synchronous = False

[deploy]
http_root = %[5]s/httpboot
http_url = %[2]s
fast_track = true
iso_master_path = %[5]s/master_iso_images

[dhcp]
dhcp_provider = none

[inspector]
require_managed_boot = False
power_off = false
extra_kernel_params = ipa-inspection-collectors=default,logs ipa-enable-vlan-interfaces=all ipa-inspection-dhcp-all-interfaces=1 ipa-collect-lldp=1
hooks = $default_hooks,parse-lldp
add_ports = all
keep_ports = present

[nova]
send_power_notifications = false

[redfish]
use_swift = false
kernel_append_params = nofb nomodeset vga=normal ipa-insecure=1 systemd.journald.forward_to_console=yes

[service_catalog]
auth_type = none
endpoint_override = http://%[4]s
`, port, httpURL, address, net.JoinHostPort(address, strconv.Itoa(RamdiskAPIPort)), WorkMount)
}
