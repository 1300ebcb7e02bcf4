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
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// outputNetworkData prints only the document, as the host's Secret holds it.
const outputNetworkData = "networkdata"

func newRenderCommand(o *Options) *cobra.Command {
	var files, addresses []string
	var output string
	command := &cobra.Command{
		Use:   "render [HOST] [-f FILE]... [--address POOL=IP]...",
		Short: "Print the network data a BareMetalHost would get now, without writing anything",
		Long: "render prints the template that governs the host, its IP claims (those it has and those the controller " +
			"would make) with their pools and addresses, and the network data document its Secret would hold.\n\n" +
			"With -f it works from files alone, without a cluster: a Metal3MachineTemplate and its Metal3DataTemplate " +
			"or a Metal3PreprovisioningTemplate, the BareMetalHost, and the Metal3 IPPools the --address values come from " +
			"(the address of a Cluster API IPAM pool is given with its prefix and gateway). " +
			"A template the admission webhook would refuse is refused with the webhook's message.",
		Example: "  kubectl preprov render worker-0 -n metal3\n" +
			"  kubectl preprov render -f template.yaml -f host.yaml -f ippool.yaml --address provisioning=192.168.111.100 -o networkdata",
		Args: cobra.MaximumNArgs(1),
		RunE: func(command *cobra.Command, args []string) error {
			given, err := parseAddresses(addresses)
			if err != nil {
				return err
			}
			if output != "" && output != outputNetworkData {
				return fmt.Errorf("-o %q: the only output is %q (the document alone)", output, outputNetworkData)
			}
			namespace, err := o.namespace()
			if err != nil {
				return err
			}
			var hostName string
			if len(args) > 0 {
				hostName = args[0]
			}
			var result *Preview
			if len(files) > 0 {
				result, err = o.renderFiles(command.Context(), files, namespace, hostName, given)
			} else {
				if hostName == "" {
					return errors.New("name the BareMetalHost, or give its files with -f")
				}
				result, err = o.renderCluster(command.Context(), client.ObjectKey{Namespace: namespace, Name: hostName}, given)
			}
			if err != nil {
				return err
			}
			return printRendered(command.OutOrStdout(), output, result)
		},
	}
	command.Flags().StringArrayVarP(&files, "filename", "f", nil, "a file or folder of objects to render from instead of the cluster (\"-\": standard input); repeat it")
	command.Flags().StringArrayVar(&addresses, "address", nil, "the address of the host on a pool it has no address from yet: <IPPool>=<IP> for a Metal3 IPPool, "+
		"<pool>=<IP>/<prefix>[,<gateway>] for a Cluster API IPAM pool; repeat it")
	command.Flags().StringVarP(&output, "output", "o", "", `"networkdata": print only the document`)
	return command
}

// printRendered prints the preview, or only its document, and fails when
// there is no document, so a pipeline stops there.
func printRendered(out io.Writer, output string, result *Preview) error {
	var err error
	switch {
	case output != outputNetworkData:
		err = printPreview(out, result)
	case result.NetworkData != nil:
		_, err = fmt.Fprintln(out, string(result.NetworkData))
	}
	if err != nil {
		return err
	}
	if result.Problem != "" {
		return fmt.Errorf("no network data for %s/%s: %s", result.Host.Namespace, result.Host.Name, result.Problem)
	}
	return nil
}

// renderCluster renders a host of the cluster: its claims are the
// controller's claim code run with its writes recorded.
func (o *Options) renderCluster(ctx context.Context, key client.ObjectKey, given map[string]givenAddress) (*Preview, error) {
	live, err := o.client()
	if err != nil {
		return nil, err
	}
	host := &bmov1alpha1.BareMetalHost{}
	if err := live.Get(ctx, key, host); err != nil {
		return nil, err
	}
	recorder := &writeRecorder{scheme: o.scheme}
	claims := &ipam.Claims{Client: recorder.client(live)}
	templates := &baremetal.Templates{Reader: live, AllMachineTemplates: o.AllMachineTemplates}
	return preview(ctx, templates, clusterClaims(claims, live, recorder, given), host)
}

// renderFiles renders a host from files alone.
func (o *Options) renderFiles(ctx context.Context, files []string, namespace, hostName string, given map[string]givenAddress,
) (*Preview, error) {
	objects, err := newObjectFiles(o.scheme)
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		if readErr := objects.Read(file, namespace); readErr != nil {
			return nil, readErr
		}
	}
	// What the admission webhook refuses never reaches the controller.
	for _, obj := range objects.ofKind(preprovv1.KindPreprovisioningTemplate) {
		m3ppt, ok := obj.(*preprovv1.Metal3PreprovisioningTemplate)
		if !ok {
			continue
		}
		if errs := template.SpecErrors(&m3ppt.Spec); len(errs) > 0 {
			groupKind := schema.GroupKind{Group: preprovv1.GroupVersion.Group, Kind: preprovv1.KindPreprovisioningTemplate}
			return nil, apierrors.NewInvalid(groupKind, m3ppt.Name, errs)
		}
	}
	host, err := fileHost(objects, hostName)
	if err != nil {
		return nil, err
	}
	templates := &baremetal.Templates{Reader: objects, AllMachineTemplates: o.AllMachineTemplates}
	return preview(ctx, templates, givenAddresses(objects, given), host)
}

// fileHost is the host of the files named hostName, or their only host.
func fileHost(objects *objectFiles, hostName string) (*bmov1alpha1.BareMetalHost, error) {
	var names []string
	hosts := objects.ofKind("BareMetalHost")
	for _, obj := range hosts {
		host, ok := obj.(*bmov1alpha1.BareMetalHost)
		if ok && (host.Name == hostName || (hostName == "" && len(hosts) == 1)) {
			return host, nil
		}
		names = append(names, obj.GetName())
	}
	switch {
	case len(names) == 0:
		return nil, errors.New("the files hold no BareMetalHost: give the host's file with -f")
	case hostName == "":
		return nil, fmt.Errorf("the files hold %d BareMetalHosts (%s): name the one to render", len(names), strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("the files hold no BareMetalHost %q, only %s", hostName, strings.Join(names, ", "))
}

func newExplainCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "explain HOST",
		Short: "Say why a BareMetalHost is where it is, and what to do about it",
		Long: "explain shows what capm3-preprov recorded on the host (its annotations, labels and events) and what the " +
			"controller's own reconcile finds now, run with its writes recorded instead of sent, with the fix.",
		Example: "  kubectl preprov explain worker-0 -n metal3",
		Args:    cobra.ExactArgs(1),
		RunE: func(command *cobra.Command, args []string) error {
			namespace, err := o.namespace()
			if err != nil {
				return err
			}
			live, err := o.client()
			if err != nil {
				return err
			}
			result, err := explain(command.Context(), o, live, client.ObjectKey{Namespace: namespace, Name: args[0]})
			if err != nil {
				return err
			}
			return printExplanation(command.OutOrStdout(), result)
		},
	}
}
