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

package bmomodel

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// InspectAnnotation asks BMO to inspect an available host again; BMO
// removes it when the inspection starts.
const InspectAnnotation = "inspect.metal3.io"

// Machine is what runs on one host's hardware, as far as addresses go.
type Machine struct {
	// PoweredOn is the host's power.
	PoweredOn bool
	// Ramdisk holds the addresses of the deploy ramdisk's last boot, nil
	// when no ramdisk runs. Under Ironic's fast track it keeps running after
	// inspection and deprovisioning, until a power-off or the OS's boot.
	Ramdisk []string
	// RamdiskRunning: the agent runs (it may run without any address).
	RamdiskRunning bool
	// OS holds the addresses the provisioned OS was given at provisioning;
	// it keeps them across power cycles until it is deprovisioned.
	OS []string
	// Installed: an OS is on the disk and boots when the host is on.
	Installed bool
}

// InUse are the addresses the machine uses now, and which of its systems
// uses them ("os" or "ramdisk").
func (m Machine) InUse() (string, []string) {
	switch {
	case !m.PoweredOn:
		return "", nil
	case m.Installed:
		return "os", m.OS
	case m.RamdiskRunning:
		return "ramdisk", m.Ramdisk
	}
	return "", nil
}

// Data is what BMO would read at a boot: the addresses in the
// preprovisioning Secret and in the Secret of spec.networkData.
type Data struct {
	Preprovisioning []string
	// Network is nil when spec.networkData is unset.
	Network []string
}

// Step is one reconcile of BMO's state machine: the next state, whether the
// inspect annotation is to be removed, and the machine after it. Done is
// true when the host rests in its state (nothing to do until its spec
// changes).
type Step struct {
	State        bmov1alpha1.ProvisioningState
	Machine      Machine
	ClearInspect bool
	Done         bool
}

// Next is one move of BMO's provisioning state machine for an unpaused
// host, as BMO's host state machine takes it (one state per reconcile):
// none -> registering -> inspecting -> available; available with an image
// -> provisioning -> provisioned; provisioned without an image ->
// deprovisioning -> available; an inspect annotation on an available host
// -> inspecting. The ramdisk boots with the data at the start of
// inspection, provisioning (when it does not run already: fast track) and
// deprovisioning; the OS gets spec.networkData's data, or else the
// preprovisioning data, at provisioning. spec.online powers a resting host.
func Next(host *bmov1alpha1.BareMetalHost, machine Machine, data Data) Step {
	boot := func(m Machine) Machine {
		m.PoweredOn, m.RamdiskRunning, m.Ramdisk = true, true, data.Preprovisioning
		return m
	}
	switch host.Status.Provisioning.State {
	case bmov1alpha1.StateNone, bmov1alpha1.StateUnmanaged:
		return Step{State: bmov1alpha1.StateRegistering, Machine: machine}
	case bmov1alpha1.StateRegistering:
		return Step{State: bmov1alpha1.StateInspecting, Machine: boot(machine)}
	case bmov1alpha1.StateInspecting:
		return Step{State: bmov1alpha1.StateAvailable, Machine: machine}
	case bmov1alpha1.StateAvailable, bmov1alpha1.StateReady:
		return nextAvailable(host, machine, boot)
	case bmov1alpha1.StateProvisioning:
		os := data.Preprovisioning
		if host.Spec.NetworkData != nil && host.Spec.NetworkData.Name != "" {
			os = data.Network
		}
		machine.Installed, machine.OS = true, os
		machine.RamdiskRunning, machine.Ramdisk = false, nil
		return Step{State: bmov1alpha1.StateProvisioned, Machine: machine}
	case bmov1alpha1.StateProvisioned:
		if !hasImage(host) {
			machine.Installed, machine.OS = false, nil
			return Step{State: bmov1alpha1.StateDeprovisioning, Machine: boot(machine)}
		}
		return resting(host, machine)
	case bmov1alpha1.StateDeprovisioning:
		return Step{State: bmov1alpha1.StateAvailable, Machine: machine}
	}
	return Step{State: host.Status.Provisioning.State, Machine: machine, Done: true}
}

func nextAvailable(host *bmov1alpha1.BareMetalHost, machine Machine, boot func(Machine) Machine) Step {
	if _, inspect := host.Annotations[InspectAnnotation]; inspect {
		return Step{State: bmov1alpha1.StateInspecting, Machine: boot(machine), ClearInspect: true}
	}
	if hasImage(host) {
		if !machine.RamdiskRunning || !machine.PoweredOn {
			machine = boot(machine)
		}
		return Step{State: bmov1alpha1.StateProvisioning, Machine: machine}
	}
	return resting(host, machine)
}

// resting applies spec.online to a host resting in its state: a power-off
// stops the ramdisk for good (the next boot is the next inspection,
// provisioning or deprovisioning); a power-on boots an installed OS again.
func resting(host *bmov1alpha1.BareMetalHost, machine Machine) Step {
	state := host.Status.Provisioning.State
	if host.Spec.Online == machine.PoweredOn {
		return Step{State: state, Machine: machine, Done: true}
	}
	machine.PoweredOn = host.Spec.Online
	if !machine.PoweredOn {
		machine.RamdiskRunning, machine.Ramdisk = false, nil
	}
	return Step{State: state, Machine: machine}
}

func hasImage(host *bmov1alpha1.BareMetalHost) bool {
	return host.Spec.Image != nil && host.Spec.Image.URL != ""
}
