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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/agent"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// ethernetExamples are the examples whose hosts have plain ethernet links.
// bond-vlan's bonds and VLANs cannot be made by this machine's kernel (no
// bonding or 8021q module); what cloud-init makes of them is checked by
// the consumers of every story (test/consumers/cloudinit).
var ethernetExamples = []string{"machine-template-ipam", "preprovisioning-template", "ipv6"}

// RamdiskBootSpec: "a host gets through inspection without DHCP". An
// example's paused hosts are set up by the manager with addresses from the
// IPAM stand-in; then, as BMO HEAD does with each host's Secret, the
// suite's Ironic 29 (from the Debian 13 root, with agent inspection and
// virtual media) registers, manages and inspects it through the Redfish
// BMC stand-in, and builds the ISO it inserts. The ISO must be a config
// drive (volume config-2) whose document equals the Secret the host names
// in spec.preprovisioningNetworkDataName. Each host then boots in a
// network namespace of its own (as root: the story fails otherwise) with
// no DHCP server anywhere: its NIC, carrying its bootMACAddress, is
// configured only from the ISO's network data (cloud-init's conversion,
// applied with ip), on a provisioning network whose routers are the
// example's pools' gateways (never the document's), and the real
// ironic-python-agent runs there with the ISO's kernel parameters. Ironic
// must move the node to manageable with the Secret's addresses on the
// boot MAC's NIC of the inventory, and the agent must heartbeat. An
// IPv6-only host reaches a second Ironic on IPv6, started only for the
// example that has one, as Metal3 runs one Ironic per family; a
// dual-stack host goes over IPv4 (test/consumers/agent takes it over both).
func RamdiskBootSpec(ctx context.Context, inputGetter func() SpecInput) {
	var input SpecInput
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		if input.Cluster.Local == nil {
			Skip("the hosts' ramdisks boot from the suite's own Ironic: on an existing cluster its BMO and Ironic do it")
		}
	})

	for _, example := range ethernetExamples {
		It("boots every host of examples/"+example+" from the ISO Ironic builds with its Secret, and the real agent inspects it", func() {
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
			routers, err := agent.ExampleRouters(example)
			Expect(err).NotTo(HaveOccurred())
			boot := startBootEnvironment(c.Local, namespace)

			// The hosts register one by one; their agents run side by side.
			begin := time.Now()
			inspections := make([]*bootingHost, 0, len(hosts))
			for _, name := range hosts {
				inspections = append(inspections, boot.beginInspection(ctx, c, namespace, name, routers))
			}
			for _, host := range inspections {
				By(fmt.Sprintf("%s: waiting for Ironic to finish its inspection (manageable) with %v on its boot NIC, and for a heartbeat", host.Name, host.ips))
				host.ExpectInspected(GinkgoT(), host.ips)
			}
			GinkgoWriter.Printf("examples/%s: %d hosts inspected by the real agent in %s\n", example, len(hosts), time.Since(begin).Round(time.Second))
		})
	}
}

// bootEnvironment is the sites of one spec: the IPv4 one around the
// suite's Ironic, and the IPv6 one with an Ironic of its own, started when
// a host needs it.
type bootEnvironment struct {
	local     *LocalCluster
	artifacts string
	ipv4      *agent.Site
	ipv6      *agent.Site
}

// startBootEnvironment starts the IPv4 site; its files and the hosts'
// logs go to <artifacts>/ramdisk/<namespace>.
func startBootEnvironment(local *LocalCluster, namespace string) *bootEnvironment {
	GinkgoHelper()
	boot := &bootEnvironment{local: local, artifacts: filepath.Join(local.ArtifactFolder, "ramdisk", namespace)}
	var err error
	// A story that cannot boot its hosts (not root, no network namespaces)
	// fails: it never passes with a log line.
	boot.ipv4, err = agent.NewSite(GinkgoT(), "IPv4", local.Consumers.Ironic, filepath.Join(boot.artifacts, "ipv4"))
	Expect(err).NotTo(HaveOccurred())
	return boot
}

// siteFor is the site whose Ironic the host's addresses reach: IPv4 when
// it has an IPv4 address, else the IPv6 site, started on first use.
func (b *bootEnvironment) siteFor(ips []string) *agent.Site {
	GinkgoHelper()
	if slices.ContainsFunc(ips, isIPv4) {
		return b.ipv4
	}
	if b.ipv6 == nil {
		By("Starting a second Ironic 29 on " + ironic.ProvisioningIPv6Address + " for the IPv6-only hosts (one Ironic per family, as Metal3 runs it)")
		var err error
		b.ipv6, err = agent.StartSite(GinkgoT(), "IPv6", b.local.Consumers.Ironic.Root, ironic.ProvisioningIPv6Address, filepath.Join(b.artifacts, "ipv6"))
		Expect(err).NotTo(HaveOccurred())
	}
	return b.ipv6
}

// bootingHost is a host whose agent runs, and the addresses its Secret
// gives it.
type bootingHost struct {
	*agent.Inspection
	ips []string
}

// beginInspection hands the host to Ironic as BMO does with the Secret the
// host names, checks the ISO, boots the host from it and starts its agent.
func (b *bootEnvironment) beginInspection(ctx context.Context, c *Cluster, namespace, name string, routers []string) *bootingHost {
	GinkgoHelper()
	host := c.getHost(ctx, Default, namespace, name)
	// The Secret the host names, as BMO reads it (not the name we expect).
	Expect(host.Spec.PreprovisioningNetworkDataName).NotTo(BeEmpty(), "host %s", name)
	secret := &corev1.Secret{}
	Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: host.Spec.PreprovisioningNetworkDataName}, secret)).To(Succeed())
	ips := networkDataIPs(Default, secret)
	site := b.siteFor(ips)
	By(fmt.Sprintf("%s: registering, managing and inspecting it in the %s site's Ironic as BMO does; booting it from the ISO's network data "+
		"with no DHCP server, routers %v, and starting the real agent", name, site.Name, routers))
	// The BMC credentials too, as BMO reads them; the stand-in plays the BMC.
	credentials := &corev1.Secret{}
	Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: host.Spec.BMC.CredentialsName}, credentials)).To(Succeed())
	inspection := site.BeginInspection(GinkgoT(), ironic.VirtualMediaHost{
		Namespace: namespace, Name: name, BootMACAddress: host.Spec.BootMACAddress, NetworkData: secret.Data[preprovv1.NetworkDataKey],
		Username: string(credentials.Data["username"]), Password: string(credentials.Data["password"]),
	}, routers)
	return &bootingHost{Inspection: inspection, ips: ips}
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

func isIPv4(address string) bool {
	return net.ParseIP(address).To4() != nil
}
