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

package ramdiskhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// NIC is the name of every host's one NIC.
const NIC = "enp1s0"

// Host is one host's namespace and NIC.
type Host struct {
	// Name is the BareMetalHost's name.
	Name string
	// Namespace is the host's network namespace.
	Namespace string
	// MAC is the NIC's address, the host's bootMACAddress.
	MAC string
}

// AddHost makes a host's namespace with its NIC, a veth end carrying mac
// whose peer is plugged into the provisioning network's bridge. The NIC is
// down and has no address.
func (n *Network) AddHost(ctx context.Context, name, mac string) (*Host, error) {
	host := &Host{Name: name, Namespace: namespaceName("host"), MAC: strings.ToLower(mac)}
	if _, err := ip(ctx, "netns", "add", host.Namespace); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.hosts = append(n.hosts, host)
	peer := peerName(len(n.hosts))
	n.mu.Unlock()
	for _, args := range [][]string{
		{"-n", host.Namespace, "link", "set", "lo", "up"},
		{"-n", host.Namespace, "link", "add", NIC, "address", host.MAC, "type", "veth", "peer", "name", peer, "netns", n.Namespace},
		{"-n", n.Namespace, "link", "set", peer, "master", bridge, "up"},
	} {
		if _, err := ip(ctx, args...); err != nil {
			return nil, fmt.Errorf("host %s: %w", name, err)
		}
	}
	return host, nil
}

// Addresses are the global addresses of the host's NIC, with prefixes.
func (h *Host) Addresses(ctx context.Context) ([]string, error) {
	out, err := ip(ctx, "-n", h.Namespace, "-j", "addr", "show", "scope", "global")
	if err != nil {
		return nil, err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("reading ip -j addr of host %s: %w", h.Name, err)
	}
	addresses := []string{}
	for _, link := range links {
		for _, address := range link.AddrInfo {
			if address.Local == "" { // ip -j lists a filtered-out address as {}
				continue
			}
			addresses = append(addresses, fmt.Sprintf("%s/%d", address.Local, address.PrefixLen))
		}
	}
	return addresses, nil
}

// LookupTimeout bounds the ramdisk's lookup call.
const LookupTimeout = 10 * time.Second

// LookupNode is the node Ironic's lookup answers with (it shows the
// ramdisk only a few fields).
type LookupNode struct {
	UUID string `json:"uuid"`
}

// Lookup makes IPA's first call from the host's namespace: GET
// <apiURL>/v1/lookup?addresses=<the NIC's MAC> with the API version IPA
// asks for at least (1.22, where lookup appeared), and returns the node
// Ironic answers with. Connections are made inside the namespace, so only
// the routes the host has are used.
func (h *Host) Lookup(ctx context.Context, apiURL string) (*LookupNode, error) {
	client := &http.Client{Timeout: LookupTimeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, address string) (conn net.Conn, err error) {
			err = inNamespace(h.Namespace, func() error {
				var dialErr error
				conn, dialErr = (&net.Dialer{}).DialContext(ctx, network, address)
				return dialErr
			})
			return conn, err
		},
	}}
	url := strings.TrimSuffix(apiURL, "/") + "/v1/lookup?addresses=" + h.MAC
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	request.Header.Set("X-OpenStack-Ironic-API-Version", "1.22")
	response, err := client.Do(request)
	if err != nil {
		return nil, fmt.Errorf("host %s: GET %s: %w", h.Name, url, err)
	}
	defer func() { _ = response.Body.Close() }()
	var body struct {
		Node LookupNode `json:"node"`
	}
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("host %s: GET %s: HTTP %s", h.Name, url, response.Status)
	}
	if err := json.NewDecoder(response.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("host %s: reading the lookup's answer: %w", h.Name, err)
	}
	return &body.Node, nil
}
