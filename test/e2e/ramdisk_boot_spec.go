//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
)

// ethernetExamples are the examples whose hosts have plain ethernet links.
// bond-vlan's bonds and VLANs cannot be made by this machine's kernel (no
// bonding or 8021q module); what cloud-init makes of them is checked by
// the consumers of every story (test/consumers/cloudinit).
var ethernetExamples = []string{"machine-template-ipam", "preprovisioning-template", "ipv6"}

// RamdiskBootSpec: "a host boots its ramdisk without DHCP". An example's
// paused hosts are set up by the manager with addresses from the IPAM
// stand-in; then, as BMO does with each host's Secret, the suite's Ironic
// (real, with virtual media and ironic-inspector) registers, manages and
// inspects it through the Redfish BMC stand-in, and builds the ISO it
// inserts. The document on the ISO's config drive must equal the Secret
// the host names. Each host then boots in a network namespace of its own
// (as root: the story fails otherwise) with no DHCP server anywhere: its
// NIC, carrying its bootMACAddress, is configured
// only from the ISO's network data (cloud-init's conversion, applied with
// ip), and from that address it calls Ironic's lookup at the ISO's
// ipa-api-url, which must answer with its own node.
func RamdiskBootSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input SpecInput
		boot  *bootEnvironment
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		if input.Cluster.Local == nil {
			Skip("the hosts' ramdisks boot from the suite's own Ironic: on an existing cluster its BMO and Ironic do it")
		}
		boot = startBootEnvironment(ctx, input.Cluster.Local)
	})

	for _, example := range ethernetExamples {
		It("boots every host of examples/"+example+" from the ISO Ironic builds with its Secret", func() {
			c := input.Cluster
			namespace := c.createNamespace(ctx, "boot")
			By("Applying examples/" + example + " and waiting for the manager to set its paused hosts up")
			objects, err := framework.ApplyFilesInNamespace(ctx, c.Client, namespace, filepath.Join(framework.RepoRoot(), "examples", example))
			Expect(err).NotTo(HaveOccurred())
			hosts := pausedForPreprovisioning(objects)
			Expect(hosts).NotTo(BeEmpty())
			Eventually(func(g Gomega) {
				for _, name := range hosts {
					host := c.getHost(ctx, g, namespace, name)
					g.Expect(host.Annotations).NotTo(HaveKey(preprovv1.PausedAnnotation), "host %s", name)
					g.Expect(host.Spec.PreprovisioningNetworkDataName).NotTo(BeEmpty(), "host %s", name)
				}
			}).Should(Succeed())

			for _, name := range hosts {
				boot.bootHost(ctx, c, namespace, name)
			}
		})
	}
}

// bootEnvironment is the BMCs and the provisioning network of one spec,
// around the suite's Ironic.
type bootEnvironment struct {
	ironic    *ironic.Server
	bmc       *redfishbmc.BMC
	network   *ramdiskhost.Network
	artifacts string
}

func startBootEnvironment(ctx context.Context, local *LocalCluster) *bootEnvironment {
	GinkgoHelper()
	boot := &bootEnvironment{ironic: local.Consumers.Ironic, artifacts: filepath.Join(local.ArtifactFolder, "ramdisk")}
	var err error
	boot.bmc, err = redfishbmc.Start(filepath.Join(boot.artifacts, "isos"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(boot.bmc.Stop)
	// A story that cannot boot its hosts (not root, no network namespaces)
	// fails: it never passes with a log line.
	boot.network, err = ramdiskhost.NewNetwork(ctx,
		net.JoinHostPort(ironic.ProvisioningAddress, strconv.Itoa(ironic.RamdiskAPIPort)), strings.TrimPrefix(boot.ironic.URL, "http://"))
	Expect(err).NotTo(HaveOccurred(), "the hosts boot in network namespaces: the e2e suite runs as root")
	DeferCleanup(boot.network.Close)
	return boot
}

// bootHost hands the host to Ironic as BMO does, checks the ISO, and, as
// root, boots the host and calls the lookup from its address.
func (b *bootEnvironment) bootHost(ctx context.Context, c *Cluster, namespace, name string) {
	GinkgoHelper()
	host := c.getHost(ctx, Default, namespace, name)
	// The Secret the host names, as BMO reads it (not the name we expect).
	Expect(host.Spec.PreprovisioningNetworkDataName).NotTo(BeEmpty(), "host %s", name)
	secret := &corev1.Secret{}
	Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: host.Spec.PreprovisioningNetworkDataName}, secret)).To(Succeed())
	document := secret.Data[preprovv1.NetworkDataKey]
	credentials := &corev1.Secret{}
	Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: host.Spec.BMC.CredentialsName}, credentials)).To(Succeed())

	By(name + ": registering, managing and inspecting it in Ironic, as BMO does, through the BMC stand-in")
	// The example's BMC address names no BMC here: the stand-in plays it.
	node, err := b.ironic.RegisterAndInspect(ctx, ironic.VirtualMediaHost{
		Namespace: namespace, Name: name, BMCAddress: b.bmc.AddHost(namespace + "-" + name),
		Username: string(credentials.Data["username"]), Password: string(credentials.Data["password"]),
		BootMACAddress: host.Spec.BootMACAddress, NetworkData: document,
	})
	Expect(err).NotTo(HaveOccurred())
	bmc, _ := b.bmc.Host(namespace + "-" + name)
	Expect(bmc.Media).NotTo(BeNil(), "Ironic inserted no CD into %s", name)
	Expect(bmc.Media.Err).NotTo(HaveOccurred())
	Expect(bmc.Media.VolumeID).To(Equal("config-2"))
	Expect(bmc.Media.NetworkData).To(MatchJSON(document), "the ISO of %s carries its Secret's network data", name)

	By(name + ": booting it with no DHCP server, configured only from the ISO's network data")
	gateways, err := ramdiskhost.Gateways(bmc.Media.NetworkData)
	Expect(err).NotTo(HaveOccurred())
	for _, gateway := range gateways {
		Expect(b.network.AddGateway(ctx, gateway)).To(Succeed())
	}
	booted, err := b.network.AddHost(ctx, name, host.Spec.BootMACAddress)
	Expect(err).NotTo(HaveOccurred())
	commands, err := booted.Boot(ctx, bmc.Media.NetworkData, filepath.Join(b.artifacts, namespace, name))
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("%s applied:\n  %s\n", name, strings.Join(commands, "\n  "))
	addresses, err := booted.Addresses(ctx)
	Expect(err).NotTo(HaveOccurred())
	ips := networkDataIPs(Default, secret)
	Expect(withoutPrefixes(addresses)).To(ConsistOf(ips), "host %s has exactly its Secret's addresses", name)

	apiURL := bmc.Media.KernelParams["ipa-api-url"]
	if !slices.ContainsFunc(ips, isIPv4) {
		By(fmt.Sprintf("%s: IPv6 only; the ISO's ipa-api-url %s is IPv4 (one Ironic has one API URL; Metal3 gives IPv6 hosts an Ironic on IPv6): no lookup", name, apiURL))
		return
	}
	By(fmt.Sprintf("%s: calling Ironic's lookup at %s from its static address", name, apiURL))
	found, err := booted.Lookup(ctx, apiURL)
	Expect(err).NotTo(HaveOccurred())
	Expect(found.UUID).To(Equal(node.UUID), "the lookup of %s answers with its own node", name)
}

// pausedForPreprovisioning names the applied hosts paused for us.
func pausedForPreprovisioning(objects []*unstructured.Unstructured) []string {
	var hosts []string
	for _, object := range objects {
		if object.GetKind() == "BareMetalHost" && object.GetAnnotations()[preprovv1.PausedAnnotation] == preprovv1.PausedForPreprovisioning {
			hosts = append(hosts, object.GetName())
		}
	}
	return hosts
}

func withoutPrefixes(addresses []string) []string {
	ips := make([]string, 0, len(addresses))
	for _, address := range addresses {
		ip, _, _ := strings.Cut(address, "/")
		ips = append(ips, ip)
	}
	return ips
}

func isIPv4(address string) bool {
	return net.ParseIP(address).To4() != nil
}
