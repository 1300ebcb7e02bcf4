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

// printer writes to out and keeps the first error, which the command
// returns: a closed pipe is reported once, not on every line.
type printer struct {
	out io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.out, format, args...)
	}
}

func printPreview(out io.Writer, p *Preview) error {
	w := &printer{out: out}
	w.printf("BareMetalHost:  %s/%s\n", p.Host.Namespace, p.Host.Name)
	if len(p.Selecting) > 0 {
		w.printf("Selected by:    %s\n", joinRefs(p.Selecting))
	}
	for _, invalid := range p.Invalid {
		w.printf("Invalid:        %s\n", invalid)
	}
	if p.Template.Name != "" {
		w.printf("Template:       %s\n", p.Template)
	}
	if len(p.Claims) > 0 {
		w.printf("IP claims:\n")
		for _, claim := range p.Claims {
			w.printf("  %s: %s\n", claimAndPool(claim), claimState(claim))
		}
	}
	for _, write := range p.Writes {
		w.printf("Would:          %s\n", write)
	}
	if p.NetworkData != nil {
		var indented bytes.Buffer
		if err := json.Indent(&indented, p.NetworkData, "  ", "  "); err == nil {
			w.printf("Network data:\n  %s\n", indented.String())
		}
	}
	if p.Problem != "" {
		w.printf("No network data: %s\n", p.Problem)
	}
	return w.err
}

// claimAndPool names a claim and its pool with their kinds:
// "IPClaim worker-0-provisioning on IPPool provisioning".
func claimAndPool(claim ipam.PoolState) string {
	return fmt.Sprintf("%s %s on %s %s", claim.ClaimKind, claim.Claim, claim.PoolKind, claim.Pool)
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

func printExplanation(out io.Writer, e *Explanation) error {
	w := &printer{out: out}
	host := e.Host
	w.printf("BareMetalHost %s/%s: %s\n", host.Namespace, host.Name, e.Situation)
	w.printf("Why: %s\n", e.Why)
	if e.Fix != "" {
		w.printf("Fix: %s\n", e.Fix)
	}
	for _, warning := range e.Warnings {
		w.printf("Warning: %s\n", warning)
	}
	if len(e.Templates) > 0 {
		w.printf("Templates of the namespace:\n")
		for _, line := range e.Templates {
			w.printf("  %s\n", line)
		}
	}
	w.printf("Host:\n")
	w.printf("  provisioning state: %s\n", orNone(string(host.Status.Provisioning.State)))
	w.printf("  spec.preprovisioningNetworkDataName: %s\n", orNone(host.Spec.PreprovisioningNetworkDataName))
	w.printf("  labels: %s\n", orNone(labels.Set(host.Labels).String()))
	for _, line := range e.Recorded {
		w.printf("  %s\n", line)
	}
	if len(e.Addresses) > 0 {
		w.printf("Addresses (the host's claims on the pools of its template):\n")
		for _, claim := range e.Addresses {
			w.printf("  %s: %s\n", claimAndPool(claim), claimState(claim))
			w.printf("    %s\n", whyAddress(claim))
		}
	}
	if len(e.Events) > 0 {
		w.printf("Events from capm3-preprov (latest last):\n")
		for _, event := range e.Events[max(0, len(e.Events)-shownEvents):] {
			w.printf("  %s  %s  %s: %s\n", lastSeen(event).Format(time.RFC3339), event.Type, event.Reason, event.Message)
		}
	}
	if len(e.Writes) > 0 {
		w.printf("The controller's next reconcile would:\n")
		for _, write := range e.Writes {
			w.printf("  %s\n", write)
		}
	}
	return w.err
}

func orNone(value string) string {
	if value == "" {
		return "(none)"
	}
	return value
}
