# Copyright The capm3-preprov Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""An ironic-python-agent hardware manager that counts a veth as a NIC.

The agent lists only interfaces with a /sys/class/net/<nic>/device link
(netutils.list_interfaces); a test host's NIC is a veth end, which has none,
so the agent's inventory would have no interface at all. This manager is
the generic one plus every veth of the namespace, read with the generic
manager's own get_interface_info. Everything else is the generic manager's.
"""

import os

from ironic_python_agent import hardware

SYS_NET = '/sys/class/net'


def _read(name, attribute):
    with open(os.path.join(SYS_NET, name, attribute)) as f:
        return f.read().strip()


def is_veth(name):
    """A virtual Ethernet interface with a peer: iflink names the peer."""
    if os.path.exists(os.path.join(SYS_NET, name, 'device')):
        return False  # a physical NIC: the generic manager lists it
    try:
        return (_read(name, 'type') == '1'  # ARPHRD_ETHER
                and _read(name, 'iflink') != _read(name, 'ifindex'))
    except OSError:
        return False


class VethNICsHardwareManager(hardware.GenericHardwareManager):
    HARDWARE_MANAGER_NAME = 'VethNICsHardwareManager'
    HARDWARE_MANAGER_VERSION = '1'

    def evaluate_hardware_support(self):
        # Above the generic manager, so its list_hardware_info (which calls
        # self.list_network_interfaces) is this one's.
        return hardware.HardwareSupport.SERVICE_PROVIDER

    def list_network_interfaces(self):
        nics = super().list_network_interfaces()
        listed = {nic.name for nic in nics}
        for name in sorted(os.listdir(SYS_NET)):
            if name not in listed and is_veth(name):
                nics.append(self.get_interface_info(name))
        return nics
