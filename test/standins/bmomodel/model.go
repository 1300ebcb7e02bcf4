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

// Package bmomodel is a small model of the baremetal-operator (BMO) and of
// what runs on the hosts it manages, for the soak (test/soak). It is not
// BMO: it keeps BMO's contract where the controller depends on it (design.md
// section 11, "Who still uses an address"), and records which addresses
// each host's machine uses:
//
//   - a host with the annotation baremetalhost.metal3.io/paused (any value)
//     is never touched;
//   - an unpaused host goes registering -> inspecting -> available, one
//     state per reconcile, with status.provisioning.state, status.poweredOn
//     and status.operationHistory written as BMO writes them; it gets BMO's
//     finalizer, and its machine stops when it is deleted;
//   - the deploy ramdisk boots with the addresses of the Secret named by
//     spec.preprovisioningNetworkDataName (key networkData,
//     networks[].ip_address) at the start of inspection, of provisioning when
//     it does not run already, and of deprovisioning; under Ironic's fast
//     track it keeps running, with the data it booted with, while the host
//     is available and until the OS boots;
//   - the OS gets spec.networkData's Secret, or when that is unset the
//     preprovisioning Secret (BMO's host_config_data.go), at provisioning,
//     and keeps those addresses until it is deprovisioned;
//   - spec.online powers a resting host off (nothing runs) and on (an
//     installed OS boots again; a ramdisk only at its next boot);
//   - the annotation inspect.metal3.io inspects an available host again;
//   - a HostClaim binds an available host matched by its hostSelector
//     (consumerRef, image, power) and, deleted, clears the host's
//     consumerRef and leaves it provisioned, as BMO's HostClaim Delete does.
package bmomodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// stepDelay is the pause between two states of a host: BMO takes one state
// per reconcile, and the controller must see the states in between.
const stepDelay = 100 * time.Millisecond

// networkDataKey is the key BMO reads network data from.
const networkDataKey = "networkData"

// Model is BMO's model: its reconcilers and the machines of the hosts.
type Model struct {
	Client client.Client

	mu sync.Mutex
	// machines is keyed by host UID: a host registered again under the same
	// name is another machine.
	machines map[types.UID]hostMachine
}

type hostMachine struct {
	key types.NamespacedName
	Machine
}

// Use is the addresses one host's machine uses now.
type Use struct {
	Host types.NamespacedName
	UID  types.UID
	// System is "os" or "ramdisk".
	System    string
	Addresses []string
}

// Start runs the model in this process with a manager and a cache of its
// own until ctx is done; done gives the manager's end.
func Start(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme) (_ *Model, done <-chan error, _ error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, err
	}
	model := &Model{Client: mgr.GetClient(), machines: map[types.UID]hostMachine{}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("bmo-model").For(&bmov1alpha1.BareMetalHost{}).Complete(model); err != nil {
		return nil, nil, err
	}
	claims := &hostClaims{Client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).Named("bmo-model-hostclaim").For(&bmov1alpha1.HostClaim{}).Complete(claims); err != nil {
		return nil, nil, err
	}
	ended := make(chan error, 1)
	go func() { ended <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, nil, errors.New("the BMO model's cache did not sync")
	}
	return model, ended, nil
}

// Uses lists the addresses every machine uses now, by host.
func (m *Model) Uses() []Use {
	m.mu.Lock()
	defer m.mu.Unlock()
	var uses []Use
	for uid, machine := range m.machines {
		if system, addresses := machine.InUse(); len(addresses) > 0 {
			uses = append(uses, Use{Host: machine.key, UID: uid, System: system, Addresses: addresses})
		}
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].Host.String() < uses[j].Host.String() })
	return uses
}

// Reconcile takes a host one state further.
func (m *Model) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := m.Client.Get(ctx, req.NamespacedName, host); err != nil {
		if apierrors.IsNotFound(err) {
			m.forget(req.NamespacedName, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	m.forget(req.NamespacedName, host.UID)
	if !host.DeletionTimestamp.IsZero() {
		// BMO powers a deleted host off before it lets it go.
		m.forget(req.NamespacedName, "")
		return ctrl.Result{}, m.removeFinalizer(ctx, host)
	}
	if _, paused := host.Annotations[bmov1alpha1.PausedAnnotation]; paused {
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(host, bmov1alpha1.BareMetalHostFinalizer) {
		original := host.DeepCopy()
		controllerutil.AddFinalizer(host, bmov1alpha1.BareMetalHostFinalizer)
		return ctrl.Result{}, m.Client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
	}
	data, err := m.readData(ctx, host)
	if err != nil {
		return ctrl.Result{}, err
	}
	step := Next(host, m.machine(host.UID), data)
	if step.Done && host.Status.PoweredOn == step.Machine.PoweredOn {
		return ctrl.Result{}, nil
	}
	if step.ClearInspect {
		original := host.DeepCopy()
		delete(host.Annotations, InspectAnnotation)
		if err := m.Client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := m.writeStatus(ctx, host, step); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: stepDelay}, nil
		}
		return ctrl.Result{}, err
	}
	m.store(host, step.Machine)
	return ctrl.Result{RequeueAfter: stepDelay}, nil
}

// writeStatus records the new state with BMO's operation history: the
// start of the state entered, the end of the state left.
func (m *Model) writeStatus(ctx context.Context, host *bmov1alpha1.BareMetalHost, step Step) error {
	now := metav1.Now()
	previous := host.Status.Provisioning.State
	if step.State != previous {
		if metric := host.OperationMetricForState(previous); metric != nil {
			metric.End = now
		}
		if metric := host.OperationMetricForState(step.State); metric != nil {
			*metric = bmov1alpha1.OperationMetric{Start: now}
		}
	}
	host.Status.Provisioning.State = step.State
	host.Status.PoweredOn = step.Machine.PoweredOn
	host.Status.OperationalStatus = bmov1alpha1.OperationalStatusOK
	host.Status.ErrorMessage = ""
	host.Status.LastUpdated = &now
	return m.Client.Status().Update(ctx, host)
}

func (m *Model) removeFinalizer(ctx context.Context, host *bmov1alpha1.BareMetalHost) error {
	if !controllerutil.ContainsFinalizer(host, bmov1alpha1.BareMetalHostFinalizer) {
		return nil
	}
	original := host.DeepCopy()
	controllerutil.RemoveFinalizer(host, bmov1alpha1.BareMetalHostFinalizer)
	return client.IgnoreNotFound(m.Client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})))
}

// readData reads the addresses a boot would get now.
func (m *Model) readData(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Data, error) {
	var data Data
	var err error
	if name := host.Spec.PreprovisioningNetworkDataName; name != "" {
		if data.Preprovisioning, err = m.secretAddresses(ctx, host.Namespace, name); err != nil {
			return data, err
		}
	}
	if host.Spec.NetworkData != nil && host.Spec.NetworkData.Name != "" {
		data.Network, err = m.secretAddresses(ctx, host.Namespace, host.Spec.NetworkData.Name)
	}
	return data, err
}

// secretAddresses are the networks[].ip_address of a Secret's network
// data; none when the Secret is missing (the boot gets no data).
func (m *Model) secretAddresses(ctx context.Context, namespace, name string) ([]string, error) {
	secret := &corev1.Secret{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return Addresses(secret.Data[networkDataKey])
}

// Addresses are the networks[].ip_address of an OpenStack network_data
// document.
func Addresses(networkData []byte) ([]string, error) {
	if len(networkData) == 0 {
		return nil, nil
	}
	var document struct {
		Networks []struct {
			IPAddress string `json:"ip_address"`
		} `json:"networks"`
	}
	if err := json.Unmarshal(networkData, &document); err != nil {
		return nil, fmt.Errorf("reading network data: %w", err)
	}
	var addresses []string
	for _, network := range document.Networks {
		if network.IPAddress != "" {
			addresses = append(addresses, network.IPAddress)
		}
	}
	return addresses, nil
}

func (m *Model) machine(uid types.UID) Machine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.machines[uid].Machine
}

func (m *Model) store(host *bmov1alpha1.BareMetalHost, machine Machine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.machines[host.UID] = hostMachine{key: client.ObjectKeyFromObject(host), Machine: machine}
}

// forget drops the machines of a host name except the one of keep: a host
// object that is gone takes its machine with it.
func (m *Model) forget(key types.NamespacedName, keep types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, machine := range m.machines {
		if machine.key == key && uid != keep {
			delete(m.machines, uid)
		}
	}
}
