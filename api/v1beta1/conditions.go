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

package v1beta1

// Condition types and reasons of Metal3PreprovisioningTemplate.
const (
	// ReadyCondition is True when every host the template selects has its
	// network data, or when it selects none yet.
	ReadyCondition = "Ready"
	// ReadyReason: every selected host has its network data.
	ReadyReason = "Ready"
	// NoHostsReason: the template selects no host yet.
	NoHostsReason = "NoHosts"
	// InvalidTemplateReason: the template cannot be used until it is fixed.
	InvalidTemplateReason = "InvalidTemplate"
	// HostsConflictingReason: another template selects some of the hosts too.
	HostsConflictingReason = "HostsConflicting"
	// HostsFailedReason: some hosts need a user's fix.
	HostsFailedReason = "HostsFailed"
	// EndpointsUnreachableReason: the hosts that need a fix are kept paused
	// because their network data gives the deploy ramdisk no way to the
	// endpoints it must reach (the manager's --ramdisk-endpoints or the
	// template's spec.ramdiskEndpoints).
	EndpointsUnreachableReason = "EndpointsUnreachable"
	// HostsWaitingReason: some hosts wait for IP addresses.
	HostsWaitingReason = "HostsWaiting"

	// NetworkDataUpToDateCondition is False when provisioned hosts keep
	// network data older than the template (provisionedHostPolicy: ReportDrift).
	NetworkDataUpToDateCondition = "NetworkDataUpToDate"
	// UpToDateReason: no host keeps older network data.
	UpToDateReason = "UpToDate"
	// DriftedReason: some provisioned hosts keep older network data.
	DriftedReason = "Drifted"
)
