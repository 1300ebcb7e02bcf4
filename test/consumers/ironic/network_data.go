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

package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"sigs.k8s.io/yaml"
)

// RefusalError is an answer of Ironic's API other than 2xx.
type RefusalError struct {
	Status int
	// Message is Ironic's faultstring, or the raw body if it has none.
	Message string
}

func (r *RefusalError) Error() string {
	return fmt.Sprintf("ironic answered HTTP %d: %s", r.Status, r.Message)
}

// InvalidNetworkData says whether Ironic refused network data for failing
// its schema: HTTP 400 "Invalid network_data".
func InvalidNetworkData(err error) bool {
	var refusal *RefusalError
	return errors.As(err, &refusal) && refusal.Status == http.StatusBadRequest &&
		strings.Contains(refusal.Message, "Invalid network_data")
}

// asRefusal turns gophercloud's unexpected status into a RefusalError with
// Ironic's message. Ironic's error body is JSON whose error_message is
// itself JSON holding the faultstring.
func asRefusal(err error) error {
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &unexpected) {
		return err
	}
	refusal := &RefusalError{Status: unexpected.Actual, Message: string(unexpected.Body)}
	var body struct {
		ErrorMessage string `json:"error_message"`
	}
	var fault struct {
		Faultstring string `json:"faultstring"`
	}
	if json.Unmarshal(unexpected.Body, &body) == nil &&
		json.Unmarshal([]byte(body.ErrorMessage), &fault) == nil && fault.Faultstring != "" {
		refusal.Message = fault.Faultstring
	}
	return refusal
}

// NodeName is the name BMO gives a host's Ironic node (ironicNodeName in
// its Ironic provisioner).
func NodeName(namespace, host string) string {
	return namespace + "~" + host
}

// Node returns the host's fake-hardware node, registering it first if
// Ironic does not know it.
func (s *Server) Node(ctx context.Context, namespace, host string) (*nodes.Node, error) {
	name := NodeName(namespace, host)
	node, err := nodes.Get(ctx, s.client, name).Extract()
	if err == nil {
		return node, nil
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil, fmt.Errorf("reading node %s: %w (ironic log: %s)", name, asRefusal(err), s.LogPath)
	}
	node, err = nodes.Create(ctx, s.client, nodes.CreateOpts{Name: name, Driver: "fake-hardware"}).Extract()
	if err != nil {
		return nil, fmt.Errorf("registering node %s: %w (ironic log: %s)", name, asRefusal(err), s.LogPath)
	}
	return node, nil
}

// SetNetworkData hands a node network data as BMO's Register does for a
// host with pre-provisioning network data and no PreprovisioningImage
// builder: it decodes the Secret's value with sigs.k8s.io/yaml into a map
// and, unless the node already holds equal data, sends one JSON patch
// operation "add /network_data" through nodes.Update. It returns the node as
// Ironic answered, after checking that Ironic stored what was sent; a
// refusal is a *RefusalError.
func (s *Server) SetNetworkData(ctx context.Context, node *nodes.Node, secretValue []byte) (*nodes.Node, error) {
	var networkData map[string]any
	if err := yaml.Unmarshal(secretValue, &networkData); err != nil {
		return nil, fmt.Errorf("decoding the network data as BMO does: %w", err)
	}
	return s.setNetworkData(ctx, node, networkData)
}

func (s *Server) setNetworkData(ctx context.Context, node *nodes.Node, networkData map[string]any) (*nodes.Node, error) {
	if reflect.DeepEqual(node.NetworkData, networkData) {
		return node, nil
	}
	updated, err := nodes.Update(ctx, s.client, node.UUID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/network_data", Value: networkData},
	}).Extract()
	if err != nil {
		return nil, asRefusal(err)
	}
	if !reflect.DeepEqual(updated.NetworkData, networkData) {
		return nil, fmt.Errorf("node %s holds other network_data than was sent:\nsent   %v\nstored %v", node.Name, networkData, updated.NetworkData)
	}
	return updated, nil
}

// Accepted is what Ironic stored for a host.
type Accepted struct {
	Node        *nodes.Node
	NetworkData map[string]any
}

// Accept registers the host's node and hands it the Secret's network data
// as BMO does; Ironic must store it. Ironic 29.0.5's schema lists bond mode
// 802.3ad, as CAPM3, Linux and cloud-init name it (21.4's said 802.1ad), so
// a document is sent as it is, bonds included.
func (s *Server) Accept(ctx context.Context, namespace, host string, secretValue []byte) (*Accepted, error) {
	name := NodeName(namespace, host)
	node, err := s.Node(ctx, namespace, host)
	if err != nil {
		return nil, err
	}
	var networkData map[string]any
	if err = yaml.Unmarshal(secretValue, &networkData); err != nil {
		return nil, fmt.Errorf("%s: decoding the network data as BMO does: %w", name, err)
	}
	stored, err := s.setNetworkData(ctx, node, networkData)
	if err != nil {
		return nil, fmt.Errorf("%s: ironic did not take the host's network data: %w\n(ironic log: %s)", name, s.explainRefusal(err, networkData), s.LogPath)
	}
	return &Accepted{Node: stored, NetworkData: networkData}, nil
}

// RefusesBroken checks that the checks above can fail: documents stored for
// a host, each broken in one way Ironic's schema forbids, must be refused
// with 400 Invalid network_data, and the node keeps what it had.
func (s *Server) RefusesBroken(ctx context.Context, accepted *Accepted) error {
	var errs []error
	for what, broken := range brokenVariants(accepted.NetworkData) {
		_, err := s.setNetworkData(ctx, accepted.Node, broken)
		switch {
		case err == nil:
			errs = append(errs, fmt.Errorf("%s: ironic must refuse %s with 400 Invalid network_data; it took it (ironic log: %s)",
				accepted.Node.Name, what, s.LogPath))
		case !InvalidNetworkData(err):
			errs = append(errs, fmt.Errorf("%s: ironic must refuse %s with 400 Invalid network_data; it answered %w (ironic log: %s)",
				accepted.Node.Name, what, err, s.LogPath))
		}
	}
	node, err := nodes.Get(ctx, s.client, accepted.Node.UUID).Extract()
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("reading node %s: %w", accepted.Node.Name, asRefusal(err)))
	case !reflect.DeepEqual(node.NetworkData, accepted.NetworkData):
		errs = append(errs, fmt.Errorf("%s: a refused update changed the node's network_data", accepted.Node.Name))
	}
	return errors.Join(errs...)
}

// brokenVariants are copies of a document that Ironic's schema forbids:
// one whose first ethernet link lost its MAC, one whose first network lost
// its network_id.
func brokenVariants(networkData map[string]any) map[string]map[string]any {
	variants := map[string]map[string]any{}
	noMAC := deepCopy(networkData)
	links, _ := noMAC["links"].([]any)
	for _, item := range links {
		link, _ := item.(map[string]any)
		if link["type"] != "bond" && link["type"] != "vlan" {
			delete(link, "ethernet_mac_address")
			variants[fmt.Sprintf("ethernet link %v without ethernet_mac_address", link["id"])] = noMAC
			break
		}
	}
	noNetworkID := deepCopy(networkData)
	if networks, _ := noNetworkID["networks"].([]any); len(networks) > 0 {
		network, _ := networks[0].(map[string]any)
		delete(network, "network_id")
		variants[fmt.Sprintf("network %v without network_id", network["id"])] = noNetworkID
	}
	return variants
}

func deepCopy(document map[string]any) map[string]any {
	data, err := json.Marshal(document)
	if err != nil {
		panic(err)
	}
	var copied map[string]any
	if err := json.Unmarshal(data, &copied); err != nil {
		panic(err)
	}
	return copied
}

// explainRefusal adds to a refusal of network data what Ironic's schema
// finds wrong with it, every failure with its place. Ironic's own message
// names one failure only, often in a branch of a oneOf that was never
// meant: an IPv4 network that lacks network_id is reported as its address
// not matching the IPv6 pattern.
func (s *Server) explainRefusal(err error, networkData map[string]any) error {
	if !InvalidNetworkData(err) {
		return err
	}
	failures, explainErr := s.schema.Failures(networkData)
	if explainErr != nil {
		return fmt.Errorf("%w\n(ironic's schema could not say more: %w)", err, explainErr)
	}
	return fmt.Errorf("%w\nironic's schema (%s) finds:\n- %s", err, s.schema.File, strings.Join(failures, "\n- "))
}
