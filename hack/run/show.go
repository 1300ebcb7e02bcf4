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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// showWhenSettled waits until no host is left paused for preprovisioning (or
// a minute has passed), then prints what a user would look at.
func showWhenSettled(ctx context.Context, c client.Client) error {
	if err := framework.WaitForHostsSettled(ctx, c, time.Minute); err != nil {
		return err
	}
	return show(ctx, c)
}

func show(ctx context.Context, c client.Client) error {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := c.List(ctx, hosts); err != nil {
		return err
	}
	lastEvents, err := lastEventByHost(ctx, c)
	if err != nil {
		return err
	}
	sayf("BareMetalHosts")
	table := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	// Every line has a cell, so the tabwriter only buffers it and Flush
	// reports a failed write.
	_, _ = fmt.Fprintln(table, "NAMESPACE\tNAME\tPAUSED\tPREPROVISIONING NETWORK DATA\tTEMPLATE\tLAST EVENT")
	for _, host := range hosts.Items {
		_, _ = fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\n", host.Namespace, host.Name, orDash(host.Annotations[preprovv1.PausedAnnotation]),
			orDash(host.Spec.PreprovisioningNetworkDataName), orDash(host.Annotations[preprovv1.TemplateAnnotation]),
			orDash(lastEvents[client.ObjectKeyFromObject(&host)]))
	}
	if err := table.Flush(); err != nil {
		return err
	}

	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := c.List(ctx, templates); err != nil {
		return err
	}
	sayf("Metal3PreprovisioningTemplates")
	table = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(table, "NAMESPACE\tNAME\tMATCHED\tREADY\tWAITING\tFAILED\tCONFLICTING\tORPHANED\tCONDITION")
	for _, template := range templates.Items {
		status := template.Status
		condition := "-"
		if ready := meta.FindStatusCondition(status.Conditions, "Ready"); ready != nil {
			condition = fmt.Sprintf("Ready=%s (%s)", ready.Status, ready.Reason)
		}
		_, _ = fmt.Fprintf(table, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", template.Namespace, template.Name,
			ptr.Deref(status.MatchedHosts, 0), ptr.Deref(status.ReadyHosts, 0), ptr.Deref(status.WaitingHosts, 0),
			ptr.Deref(status.FailedHosts, 0), ptr.Deref(status.ConflictingHosts, 0), ptr.Deref(status.OrphanedHosts, 0), condition)
	}
	if err := table.Flush(); err != nil {
		return err
	}

	claims := &ipamv1.IPClaimList{}
	if err := c.List(ctx, claims); err != nil {
		return err
	}
	sayf("IPClaims")
	table = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(table, "NAMESPACE\tNAME\tPOOL\tADDRESS\tERROR")
	for _, claim := range claims.Items {
		address, errorMessage := "-", "-"
		if claim.Status.Address != nil {
			address = claim.Status.Address.Name
		}
		if claim.Status.ErrorMessage != nil {
			errorMessage = *claim.Status.ErrorMessage
		}
		_, _ = fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\n", claim.Namespace, claim.Name, claim.Spec.Pool.Name, address, errorMessage)
	}
	if err := table.Flush(); err != nil {
		return err
	}

	addresses := &ipamv1.IPAddressList{}
	if err := c.List(ctx, addresses); err != nil {
		return err
	}
	sayf("IPAddresses")
	table = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(table, "NAMESPACE\tNAME\tADDRESS\tPREFIX\tGATEWAY\tCLAIM")
	for _, address := range addresses.Items {
		gateway := "-"
		if address.Spec.Gateway != nil {
			gateway = string(*address.Spec.Gateway)
		}
		_, _ = fmt.Fprintf(table, "%s\t%s\t%s\t%d\t%s\t%s\n", address.Namespace, address.Name, address.Spec.Address,
			address.Spec.Prefix, gateway, address.Spec.Claim.Name)
	}
	if err := table.Flush(); err != nil {
		return err
	}

	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		return err
	}
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	for _, secret := range secrets.Items {
		sayf("Secret %s/%s, key %s", secret.Namespace, secret.Name, preprovv1.NetworkDataKey)
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, secret.Data[preprovv1.NetworkDataKey], "", "  "); err != nil {
			return err
		}
		fmt.Println(pretty.String())
	}
	return nil
}

// lastEventByHost is the newest event of each host: its reason, and for a
// Warning what is wrong.
func lastEventByHost(ctx context.Context, c client.Client) (map[client.ObjectKey]string, error) {
	events := &eventsv1.EventList{}
	if err := c.List(ctx, events); err != nil {
		return nil, err
	}
	sort.Slice(events.Items, func(i, j int) bool { return eventTime(&events.Items[i]).Before(eventTime(&events.Items[j])) })
	last := map[client.ObjectKey]string{}
	for _, event := range events.Items {
		if event.Regarding.Kind == "BareMetalHost" {
			key := client.ObjectKey{Namespace: event.Regarding.Namespace, Name: event.Regarding.Name}
			last[key] = event.Reason
			if event.Type == corev1.EventTypeWarning {
				last[key] += ": " + event.Note
			}
		}
	}
	return last, nil
}

func eventTime(event *eventsv1.Event) time.Time {
	if event.Series != nil {
		return event.Series.LastObservedTime.Time
	}
	return event.EventTime.Time
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
