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

// Annotations and labels of capm3-preprov's contract with users, BMO and CAPM3.
const (
	// PausedAnnotation is BMO's pause annotation.
	PausedAnnotation = "baremetalhost.metal3.io/paused"
	// PausedForPreprovisioning is the value that hands a host to us. Other
	// values (CAPM3's metal3.io/capm3, clusterctl move, users) are never ours.
	PausedForPreprovisioning = "metal3.io/preprovisioning"

	// EnabledAnnotation opts a Metal3MachineTemplate in as a template source.
	EnabledAnnotation = "preprovisioning.metal3.io/enabled"

	// AutoPauseLabel, set to AutoPauseLabelValue on a namespace, has our
	// webhook pause the BareMetalHosts created there for preprovisioning.
	// The webhook configuration's namespaceSelector (config/webhook) selects
	// on it; nothing else reads it.
	AutoPauseLabel = "preprovisioning.metal3.io/auto-pause"
	// AutoPauseLabelValue is the value of AutoPauseLabel that opts in.
	AutoPauseLabelValue = "true"

	// ManagedLabel marks the BareMetalHosts we set up, and the Secrets and
	// IPClaims we create. Our Secret cache only sees objects with it.
	ManagedLabel = "preprovisioning.metal3.io/managed"
	// ManagedLabelValue is the value of ManagedLabel.
	ManagedLabelValue = "true"

	// TemplateAnnotation records on a host we set up which template its
	// network data was rendered from ("<Kind>/<name>"), so a host the template
	// no longer selects can be reported as orphaned.
	TemplateAnnotation = "preprovisioning.metal3.io/template"
	// ProblemAnnotation records on a host, while it lasts, why the host is
	// not moving on: the reason of its Warning or drift event (for example
	// PreprovisioningIPClaimFailed, PreprovisioningNetworkDataDrift,
	// PreprovisioningInspectionStalled). The template status and the hosts
	// metric read it, so a restarted manager reports the hosts at once. It is
	// removed when the problem goes.
	ProblemAnnotation = "preprovisioning.metal3.io/problem"
	// UnpausedAtAnnotation records on a host when we removed our pause
	// (RFC 3339), so a host BMO does not get through inspection is reported.
	UnpausedAtAnnotation = "preprovisioning.metal3.io/unpaused-at"
	// RerenderAnnotation on a provisioned host asks to re-render its network
	// data once, though its template's policy is to report drift. It is
	// removed once done.
	RerenderAnnotation = "preprovisioning.metal3.io/rerender"

	// PoolGenerationAnnotation records on our IPClaim the pool generation it was
	// created against, so a claim that failed (pool exhausted) is retried once
	// the pool changes, and only then.
	PoolGenerationAnnotation = "preprovisioning.metal3.io/pool-generation"

	// PoolAddressesAnnotation records on a failed IPClaim of ours how many
	// IPAddresses its pool had when we first saw the failure.
	PoolAddressesAnnotation = "preprovisioning.metal3.io/pool-addresses"
	// RetryAnnotation records on an IPClaim of ours made again the address
	// that looked free, how many claims in a row were made for it, and the
	// addresses IPAM refused although they looked free (JSON).
	RetryAnnotation = "preprovisioning.metal3.io/retry"

	// UnusedSinceAnnotation records on a claim of ours when the host's
	// network data stopped naming its address (RFC 3339). The claim is kept
	// while the host's machine may still run with that address (its OS, or
	// its deploy ramdisk under Ironic's fast track), and released once the
	// host has been through a state after that time in which the machine
	// boots with the new data (deprovisioned, powered off, inspected again).
	UnusedSinceAnnotation = "preprovisioning.metal3.io/unused-since"
	// HeldForAnnotation says, on a claim kept under UnusedSinceAnnotation,
	// which machine may still use its address and what releases it.
	HeldForAnnotation = "preprovisioning.metal3.io/held-for"

	// PreallocatedForAnnotation is where earlier versions listed, on an
	// IPPool, the spec.preAllocations keys they wrote (a JSON list). All
	// annotations of an object together may not exceed 256 KiB, which the
	// list reached at about 6,000 hosts per pool. Its keys still count as
	// ours; the list only shrinks as they are removed and is never written
	// anew.
	PreallocatedForAnnotation = "preprovisioning.metal3.io/preallocations"

	// BMOSecretLabel is the label BMO's Secret cache selects on.
	BMOSecretLabel = "environment.metal3.io"
	// BMOSecretLabelValue is the value of BMOSecretLabel.
	BMOSecretLabelValue = "baremetal"

	// BMOSecretFinalizer is the finalizer BMO puts on a Secret a host points
	// at. BMO removes it once it has deleted the host; until then the
	// Secret stays, being deleted, under its name.
	BMOSecretFinalizer = "baremetalhost.metal3.io/secret"

	// WrittenForAnnotation records on a network data Secret the name of the
	// BareMetalHost we wrote it for. Only we write it: BMO puts the host's
	// owner reference on any Secret the host points at, so an owner
	// reference alone does not make a Secret ours.
	WrittenForAnnotation = "preprovisioning.metal3.io/written-for"

	// NetworkDataKey is the key BMO reads from the network data Secret.
	NetworkDataKey = "networkData"
	// NetworkDataSecretSuffix makes the Secret name "<bmh>-preprov-networkdata".
	NetworkDataSecretSuffix = "-preprov-networkdata"

	// PreallocationsFieldManager is the field manager of our writes of an
	// IPPool's spec.preAllocations entries (--pool-preallocations). The API
	// server's record of its fields (metadata.managedFields) is the list of
	// the entries that are ours.
	PreallocationsFieldManager = "capm3-preprov-preallocations"
)

// The kinds of template, as events, logs and the TemplateAnnotation name them.
const (
	// KindMachineTemplate is CAPM3's Metal3MachineTemplate.
	KindMachineTemplate = "Metal3MachineTemplate"
	// KindPreprovisioningTemplate is our Metal3PreprovisioningTemplate.
	KindPreprovisioningTemplate = "Metal3PreprovisioningTemplate"
)
