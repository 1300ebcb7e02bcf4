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

// Package ramdiskhost plays bare metal hosts that boot Ironic's deploy
// ramdisk without DHCP, on a provisioning network made of Linux network
// namespaces; no DHCP server exists anywhere.
//
//   - The provisioning network is one namespace with a bridge, br0. It
//     holds the gateway address of each host subnet (so it is the hosts'
//     router) and Ironic's address as the ramdisk sees it
//     (ironic.ProvisioningAddress), where a relay, listening inside that
//     namespace, forwards each connection to Ironic's API on the machine's
//     loopback. Nothing listens on, or sends to, an address of the
//     machine's own network.
//   - Each host is a namespace of its own whose one NIC, enp1s0, is a veth
//     end carrying the host's bootMACAddress; its peer is plugged into br0.
//     The NIC is down and has no address until the host boots.
//   - Booting (Host.Boot) stands in for the ramdisk's network setup (glean
//     in Metal3's IPA image): the network data read from the ISO's config
//     drive is converted by cloud-init's own code (`cloud-init devel
//     net-convert`, netplan output, the NICs passed as --mac name,MAC) and
//     the result applied with ip commands, nothing else.
//   - Lookup stands in for IPA's first call: GET /v1/lookup?addresses=<MAC>
//     to the ipa-api-url of the ISO's kernel command line, from the host's
//     namespace.
package ramdiskhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// bridge is the provisioning network's bridge in its namespace.
const bridge = "br0"

// namespaces numbers the namespaces of this process, so parallel runs and
// several networks never share a name.
var namespaces atomic.Int64

func namespaceName(kind string) string {
	return fmt.Sprintf("preprov-%d-%s%d", os.Getpid(), kind, namespaces.Add(1))
}

// Network is the provisioning network.
type Network struct {
	// Namespace is the provisioning network's namespace.
	Namespace string

	relay    net.Listener
	target   string
	copies   sync.WaitGroup
	mu       sync.Mutex
	gateways map[string]bool
	hosts    []*Host
}

// NewNetwork makes the provisioning network and starts the relay from
// relayAddress (host:port, inside the namespace) to target (host:port of
// Ironic's API on loopback). It fails with ErrNotRoot when not root.
func NewNetwork(ctx context.Context, relayAddress, target string) (_ *Network, err error) {
	if err = requireRoot(); err != nil {
		return nil, err
	}
	n := &Network{Namespace: namespaceName("prov"), target: target, gateways: map[string]bool{}}
	if _, err = ip(ctx, "netns", "add", n.Namespace); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Close())
		}
	}()
	relayIP, _, err := net.SplitHostPort(relayAddress)
	if err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", bridge, "type", "bridge"},
		{"link", "set", bridge, "up"},
		{"addr", "add", hostPrefix(relayIP), "dev", "lo"},
	} {
		if _, err = ip(ctx, append([]string{"-n", n.Namespace}, args...)...); err != nil {
			return nil, err
		}
	}
	err = inNamespace(n.Namespace, func() error {
		var listenErr error
		n.relay, listenErr = (&net.ListenConfig{}).Listen(ctx, "tcp", relayAddress)
		return listenErr
	})
	if err != nil {
		return nil, fmt.Errorf("the relay to Ironic on %s in %s: %w", relayAddress, n.Namespace, err)
	}
	go n.serveRelay()
	return n, nil
}

// hostPrefix is an address as a single-address prefix.
func hostPrefix(address string) string {
	if net.ParseIP(address).To4() != nil {
		return address + "/32"
	}
	return address + "/128"
}

// AddGateway gives the provisioning network a host subnet's gateway
// address (an address with its prefix, 192.168.111.1/24), once.
func (n *Network) AddGateway(ctx context.Context, gateway string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gateways[gateway] {
		return nil
	}
	args := []string{"-n", n.Namespace, "addr", "add", gateway, "dev", bridge}
	if ipAddress, _, err := net.ParseCIDR(gateway); err == nil && ipAddress.To4() == nil {
		args = append(args, "nodad") // usable at once, as a router's configured address
	}
	if _, err := ip(ctx, args...); err != nil {
		return err
	}
	n.gateways[gateway] = true
	return nil
}

// serveRelay forwards each connection to the target until Close.
func (n *Network) serveRelay() {
	for {
		conn, err := n.relay.Accept()
		if err != nil {
			return
		}
		n.copies.Add(1)
		go func() {
			defer n.copies.Done()
			n.forward(conn)
		}()
	}
}

// forward copies both ways between a ramdisk's connection and one to the
// target, dialled from this goroutine, which is in the machine's namespace.
func (n *Network) forward(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	upstream, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(context.Background(), "tcp", n.target)
	if err != nil {
		return
	}
	defer func() { _ = upstream.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(to, from net.Conn) {
		_, _ = io.Copy(to, from)
		if tcp, ok := to.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, conn)
	go pipe(conn, upstream)
	<-done
	<-done
}

// Close stops the relay and removes the hosts' and the network's
// namespaces (removing a namespace removes its veth ends).
func (n *Network) Close() error {
	var errs []error
	if n.relay != nil {
		errs = append(errs, n.relay.Close())
		n.copies.Wait()
	}
	n.mu.Lock()
	hosts := n.hosts
	n.hosts = nil
	n.mu.Unlock()
	for _, host := range hosts {
		if _, err := ip(context.Background(), "netns", "del", host.Namespace); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := ip(context.Background(), "netns", "del", n.Namespace); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// peerName is the name of a host's veth end in the provisioning network
// (at most 15 characters).
func peerName(index int) string {
	return "h" + strconv.Itoa(index)
}
