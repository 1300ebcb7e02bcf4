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

package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// shownEvents is how many of a host's latest events explain shows.
const shownEvents = 5

func printPreview(out io.Writer, p *Preview) {
	fmt.Fprintf(out, "BareMetalHost:  %s/%s\n", p.Host.Namespace, p.Host.Name)
	if len(p.Selecting) > 0 {
		fmt.Fprintf(out, "Selected by:    %s\n", joinRefs(p.Selecting))
	}
	for _, invalid := range p.Invalid {
		fmt.Fprintf(out, "Invalid:        %s\n", invalid)
	}
	if p.Template.Name != "" {
		fmt.Fprintf(out, "Template:       %s\n", p.Template)
	}
	if len(p.Claims) > 0 {
		fmt.Fprintln(out, "IP claims:")
		for _, claim := range p.Claims {
			fmt.Fprintf(out, "  IPClaim %s on IPPool %s: %s\n", claim.Claim, claim.Pool, claimState(claim))
		}
	}
	for _, write := range p.Writes {
		fmt.Fprintf(out, "Would:          %s\n", write)
	}
	if p.NetworkData != nil {
		var indented bytes.Buffer
		if err := json.Indent(&indented, p.NetworkData, "  ", "  "); err == nil {
			fmt.Fprintf(out, "Network data:\n  %s\n", indented.String())
		}
	}
	if p.Problem != "" {
		fmt.Fprintf(out, "No network data: %s\n", p.Problem)
	}
}

func claimState(claim ipam.PoolState) string {
	switch {
	case claim.Address != nil:
		state := fmt.Sprintf("%s/%d", claim.Address.IP, claim.Address.Prefix)
		if claim.Address.Gateway != "" {
			state += ", gateway " + claim.Address.Gateway
		}
		if len(claim.Address.DNSServers) > 0 {
			state += ", DNS " + strings.Join(claim.Address.DNSServers, " ")
		}
		return state
	case claim.Failed != "":
		return "failed: " + claim.Failed
	}
	return "no address yet: " + claim.Waiting
}

func printExplanation(out io.Writer, e *Explanation) {
	host := e.Host
	fmt.Fprintf(out, "BareMetalHost %s/%s: %s\n", host.Namespace, host.Name, e.Situation)
	fmt.Fprintf(out, "Why: %s\n", e.Why)
	if e.Fix != "" {
		fmt.Fprintf(out, "Fix: %s\n", e.Fix)
	}
	for _, warning := range e.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", warning)
	}
	if len(e.Templates) > 0 {
		fmt.Fprintln(out, "Templates of the namespace:")
		for _, line := range e.Templates {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	fmt.Fprintln(out, "Host:")
	fmt.Fprintf(out, "  provisioning state: %s\n", orNone(string(host.Status.Provisioning.State)))
	fmt.Fprintf(out, "  spec.preprovisioningNetworkDataName: %s\n", orNone(host.Spec.PreprovisioningNetworkDataName))
	fmt.Fprintf(out, "  labels: %s\n", orNone(labels.Set(host.Labels).String()))
	for _, line := range e.Recorded {
		fmt.Fprintf(out, "  %s\n", line)
	}
	if len(e.Events) > 0 {
		fmt.Fprintln(out, "Events from capm3-preprov (latest last):")
		for _, event := range e.Events[max(0, len(e.Events)-shownEvents):] {
			fmt.Fprintf(out, "  %s  %s  %s: %s\n", lastSeen(event).Format(time.RFC3339), event.Type, event.Reason, event.Message)
		}
	}
	if len(e.Writes) > 0 {
		fmt.Fprintln(out, "The controller's next reconcile would:")
		for _, write := range e.Writes {
			fmt.Fprintf(out, "  %s\n", write)
		}
	}
}

func orNone(value string) string {
	if value == "" {
		return "(none)"
	}
	return value
}
