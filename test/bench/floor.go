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
	"context"
	"fmt"
	"strconv"
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// floor does the object writes the controller must do, and nothing else,
// as tight as the same client allows: workers create each host's IPClaims
// (one per pool), and as soon as the IPAM stand-in has allocated both
// addresses (watched, not polled, as the manager's cache does) a worker
// creates the host's Secret and does the one patch on it; that last step
// goes before any new host's claims. No worker waits for IPAM. It uses
// controller-runtime's client with the manager's QPS and burst, and as many
// workers as the manager has. In a sharded fleet a floor does one shard's
// hosts and watches only that shard's objects, as its manager would.
type floor struct {
	client client.Client
	fleet  fleet
	shard  string
	hosts  []*bmov1alpha1.BareMetalHost
	// addressed receives each host once it has an address from every pool.
	addressed chan int

	mu sync.Mutex
	// claimOwner maps a claim name to its host's index.
	claimOwner map[string]int
	// claimAddress maps a claim name to the IPAddress IPAM gave it.
	claimAddress map[string]string
	addresses    map[string]networkdata.Address
	signalled    map[int]bool
}

// newFloor is the floor of one shard of the fleet whose hosts are given,
// with a client of its own.
func newFloor(config *rest.Config, fleet fleet, hosts []*bmov1alpha1.BareMetalHost, shard string) (*floor, error) {
	c, err := client.New(config, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, err
	}
	f := &floor{
		client: c, fleet: fleet, shard: shard, hosts: hosts, addressed: make(chan int, len(hosts)),
		claimOwner: map[string]int{}, claimAddress: map[string]string{},
		addresses: map[string]networkdata.Address{}, signalled: map[int]bool{},
	}
	for _, i := range fleet.shardHosts(shard) {
		for _, pool := range poolsOf(shard) {
			f.claimOwner[ipam.ClaimName(hosts[i].Name, pool)] = i
		}
	}
	return f, nil
}

// run works through every host of its shard with the given number of
// workers until ctx ends or a worker fails.
func (f *floor) run(ctx context.Context, config *rest.Config, namespace string, workers int) error {
	if err := f.watch(ctx, config, namespace); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	indexes := f.fleet.shardHosts(f.shard)
	unclaimed := make(chan int, len(indexes))
	for _, i := range indexes {
		unclaimed <- i
	}
	close(unclaimed)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			if err := f.work(ctx, unclaimed); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// work takes a host whose addresses are there if there is one, else a new
// host to claim addresses for, until ctx ends.
func (f *floor) work(ctx context.Context, unclaimed <-chan int) error {
	for {
		select {
		case i := <-f.addressed:
			if err := f.finish(ctx, i); err != nil {
				return err
			}
			continue
		default:
		}
		select {
		case i := <-f.addressed:
			if err := f.finish(ctx, i); err != nil {
				return err
			}
		case i, ok := <-unclaimed:
			if !ok {
				unclaimed = nil
				continue
			}
			if err := f.claim(ctx, i); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func (f *floor) watch(ctx context.Context, config *rest.Config, namespace string) error {
	options := cache.Options{
		Scheme:            framework.Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
	}
	if f.shard != "" {
		options.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{clusterv1.WatchLabel: f.shard})
	}
	informers, err := cache.New(config, options)
	if err != nil {
		return err
	}
	claims, err := informers.GetInformer(ctx, &ipamv1.IPClaim{})
	if err != nil {
		return err
	}
	if _, err = claims.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: f.onClaim, UpdateFunc: func(_, obj any) { f.onClaim(obj) },
	}); err != nil {
		return err
	}
	addresses, err := informers.GetInformer(ctx, &ipamv1.IPAddress{})
	if err != nil {
		return err
	}
	if _, err = addresses.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: f.onAddress}); err != nil {
		return err
	}
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)
	return ctx.Err()
}

func (f *floor) onClaim(obj any) {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok || claim.Status.Address == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimAddress[claim.Name] = claim.Status.Address.Name
	if host, ours := f.claimOwner[claim.Name]; ours {
		f.signalIfAddressed(host)
	}
}

func (f *floor) onAddress(obj any) {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addresses[address.Name] = addressOf(address)
	if host, ours := f.claimOwner[address.Spec.Claim.Name]; ours {
		f.signalIfAddressed(host)
	}
}

// signalIfAddressed queues a host's last step once every pool gave it an
// address. The caller holds f.mu.
func (f *floor) signalIfAddressed(host int) {
	if f.signalled[host] || f.addressesOf(host) == nil {
		return
	}
	f.signalled[host] = true
	f.addressed <- host
}

// addressesOf is a host's address from each pool, or nil while one is
// missing. The caller holds f.mu.
func (f *floor) addressesOf(host int) map[string]networkdata.Address {
	addresses := make(map[string]networkdata.Address, len(pools))
	for _, pool := range poolsOf(f.shard) {
		address, ok := f.addresses[f.claimAddress[ipam.ClaimName(f.hosts[host].Name, pool)]]
		if !ok {
			return nil
		}
		addresses[pool] = address
	}
	return addresses
}

// claim creates host i's claims.
func (f *floor) claim(ctx context.Context, i int) error {
	host := f.hosts[i]
	for _, pool := range poolsOf(f.shard) {
		if err := f.client.Create(ctx, floorClaim(host, pool)); err != nil {
			return fmt.Errorf("creating the IPClaim of %s on %s: %w", host.Name, pool, err)
		}
	}
	return nil
}

// finish renders host i's network data, creates its Secret and patches it.
func (f *floor) finish(ctx context.Context, i int) error {
	host := f.hosts[i]
	f.mu.Lock()
	addresses := f.addressesOf(i)
	f.mu.Unlock()
	rendered, err := networkdata.Render(f.fleet.networkDataOf(i), hostFacts(host), addresses)
	if err != nil {
		return fmt.Errorf("rendering the network data of %s: %w", host.Name, err)
	}
	if err := f.client.Create(ctx, floorSecret(host, rendered)); err != nil {
		return fmt.Errorf("creating the Secret of %s: %w", host.Name, err)
	}
	original := host.DeepCopy()
	host.Spec.PreprovisioningNetworkDataName = host.Name + preprovv1.NetworkDataSecretSuffix
	host.Labels[preprovv1.ManagedLabel] = preprovv1.ManagedLabelValue
	host.Annotations[preprovv1.TemplateAnnotation] = "Metal3MachineTemplate/" + f.fleet.templateOf(i)
	delete(host.Annotations, preprovv1.PausedAnnotation)
	if err := f.client.Patch(ctx, host, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching %s: %w", host.Name, err)
	}
	return nil
}

// floorClaim is the claim the controller makes: named <host>-<pool>, owned
// by the host, with our label (and its host's shard's) and the pool's generation.
func floorClaim(host *bmov1alpha1.BareMetalHost, pool string) *ipamv1.IPClaim {
	return &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ipam.ClaimName(host.Name, pool),
			Namespace:       host.Namespace,
			Labels:          ownership.WithHostShard(host, map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}),
			Annotations:     map[string]string{preprovv1.PoolGenerationAnnotation: strconv.Itoa(1)},
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
		},
		Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool, Namespace: host.Namespace}},
	}
}

// floorSecret is the Secret the controller makes.
func floorSecret(host *bmov1alpha1.BareMetalHost, rendered []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      host.Name + preprovv1.NetworkDataSecretSuffix,
			Namespace: host.Namespace,
			Labels: ownership.WithHostShard(host, map[string]string{
				preprovv1.BMOSecretLabel: preprovv1.BMOSecretLabelValue,
				preprovv1.ManagedLabel:   preprovv1.ManagedLabelValue,
			}),
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{preprovv1.NetworkDataKey: rendered},
	}
}

func hostFacts(host *bmov1alpha1.BareMetalHost) networkdata.Host {
	facts := networkdata.Host{
		Name: host.Name, Namespace: host.Namespace, Annotations: host.Annotations, BootMACAddress: host.Spec.BootMACAddress,
	}
	if host.Status.HardwareDetails != nil {
		for _, nic := range host.Status.HardwareDetails.NIC {
			facts.NICs = append(facts.NICs, networkdata.NIC{Name: nic.Name, MAC: nic.MAC})
		}
	}
	return facts
}

func addressOf(address *ipamv1.IPAddress) networkdata.Address {
	result := networkdata.Address{IP: string(address.Spec.Address), Prefix: address.Spec.Prefix}
	if address.Spec.Gateway != nil {
		result.Gateway = string(*address.Spec.Gateway)
	}
	for _, server := range address.Spec.DNSServers {
		result.DNSServers = append(result.DNSServers, string(server))
	}
	return result
}
