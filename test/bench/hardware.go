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

package main

import (
	"fmt"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// cpuFlags is what Ironic reports for a current x86 server: a long list,
// and a large part of an inspected host's size.
var cpuFlags = strings.Fields(`3dnowprefetch abm adx aes apic arat arch_capabilities avx avx2 avx512bw avx512cd
avx512dq avx512f avx512vl avx512_vnni bmi1 bmi2 clflush clflushopt clwb cmov constant_tsc cpuid cx16 cx8 de
ept erms f16c flexpriority fma fpu fsgsbase fxsr hle ht hypervisor ibpb ibrs invpcid lahf_lm lm mca mce md_clear
mmx movbe mpx msr mtrr nopl nx ospke pae pat pcid pclmulqdq pdpe1gb pge pku pni popcnt pse pse36 rdrand rdseed
rdtscp rep_good rtm sep smap smep ss ssbd sse sse2 sse4_1 sse4_2 ssse3 stibp syscall tpr_shadow tsc
tsc_adjust tsc_deadline_timer tsc_known_freq umip vme vmx vnmi vpid x2apic xgetbv1 xsave xsavec xsaveopt xsaves xtopology`)

// inspectedStatus is the status of host i after an inspection: CPU, six
// NICs (eno1 is the boot NIC), four disks, RAM and firmware.
func inspectedStatus(i int, bootMAC string) bmov1alpha1.BareMetalHostStatus {
	nics := make([]bmov1alpha1.NIC, 0, 6)
	for n := range 6 {
		nic := bmov1alpha1.NIC{
			Name:       fmt.Sprintf("eno%d", n+1),
			Model:      "0x8086 0x1593 Intel Corporation Ethernet Controller E810-C for SFP",
			MAC:        fmt.Sprintf("b4:96:91:%02x:%02x:%02x", n, (i>>8)&0xff, i&0xff),
			IP:         fmt.Sprintf("fe80::b696:91ff:fe%02x:%02x%02x%%eno%d", n, (i>>8)&0xff, i&0xff, n+1),
			SpeedGbps:  25,
			PCIAddress: fmt.Sprintf("0000:%02x:00.%d", 0x17+n/2, n%2),
			LLDP: &bmov1alpha1.LLDP{
				SwitchID: fmt.Sprintf("c4:7e:e0:%02x:00:01", n), PortID: fmt.Sprintf("Ethernet%d/%d", i%48+1, n+1),
				SwitchSystemName: fmt.Sprintf("leaf-%s-%d", rackOf(i), n%2),
			},
		}
		if n == 0 {
			nic.MAC, nic.PXE = bootMAC, true
		}
		nics = append(nics, nic)
	}
	storage := make([]bmov1alpha1.Storage, 0, 4)
	for d := range 4 {
		storage = append(storage, bmov1alpha1.Storage{
			Name:           fmt.Sprintf("/dev/nvme%dn1", d),
			AlternateNames: []string{fmt.Sprintf("/dev/disk/by-path/pci-0000:%02x:00.0-nvme-1", 0x5e+d)},
			Type:           bmov1alpha1.NVME,
			SizeBytes:      3840755982336,
			Vendor:         "Samsung",
			Model:          "SAMSUNG MZQL23T8HCLS-00A07",
			SerialNumber:   fmt.Sprintf("S64HNE0T%06d%d", i, d),
			WWN:            fmt.Sprintf("eui.36344830%08x%02x", i, d),
		})
	}
	return bmov1alpha1.BareMetalHostStatus{
		OperationalStatus: bmov1alpha1.OperationalStatusOK,
		Provisioning:      bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateAvailable, ID: fmt.Sprintf("3c8a6f2e-0000-4000-8000-%012d", i)},
		HardwareProfile:   "unknown",
		HardwareDetails: &bmov1alpha1.HardwareDetails{
			SystemVendor: bmov1alpha1.HardwareSystemVendor{
				Manufacturer: "Dell Inc.", ProductName: "PowerEdge R650 (SKU=0A4B)", SerialNumber: fmt.Sprintf("7X%05d", i),
			},
			Firmware:     bmov1alpha1.Firmware{BIOS: bmov1alpha1.BIOS{Date: "03/12/2025", Vendor: "Dell Inc.", Version: "1.16.2"}},
			RAMMebibytes: 524288,
			NIC:          nics,
			Storage:      storage,
			CPU: bmov1alpha1.CPU{
				Arch: "x86_64", Model: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
				ClockMegahertz: 3200, Flags: cpuFlags, Count: 128,
			},
			Hostname: hostName(i),
		},
	}
}
