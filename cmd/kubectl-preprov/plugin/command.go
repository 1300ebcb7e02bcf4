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

// Package plugin is kubectl preprov: it tells what network data a
// BareMetalHost would get and why a host is where it is, with the
// controller's own code (template selection, claims, renderer, validator)
// and without writing anything.
//
// Layer: the top, beside the manager's main.go: it runs baremetal's host
// manager with its writes recorded, and no reconciler.
package plugin

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
)

// Options are the flags every command shares.
type Options struct {
	// ConfigFlags load the kubeconfig as kubectl does: --kubeconfig,
	// --context, -n/--namespace and the other overrides.
	loadingRules *clientcmd.ClientConfigLoadingRules
	overrides    *clientcmd.ConfigOverrides
	// AllMachineTemplates and InspectionStallTimeout are the manager's
	// flags of the same names.
	AllMachineTemplates    bool
	InspectionStallTimeout time.Duration
	// RamdiskEndpoints is the manager's --ramdisk-endpoints.
	RamdiskEndpoints []string

	scheme *runtime.Scheme
	// restConfig, when set, is used instead of the kubeconfig (tests).
	restConfig *rest.Config
}

// NewCommand returns the kubectl preprov command.
func NewCommand(out, errOut io.Writer) *cobra.Command {
	options := &Options{
		loadingRules: clientcmd.NewDefaultClientConfigLoadingRules(),
		overrides:    &clientcmd.ConfigOverrides{},
		scheme:       scheme.New(),
	}
	command := &cobra.Command{
		Use:   "kubectl-preprov",
		Short: "What capm3-preprov gives a BareMetalHost, and why a host is where it is",
		Long: "kubectl preprov renders the preprovisioning network data of a BareMetalHost and explains where the host " +
			"stands, with the controller's own code. It never writes to the cluster.",
		SilenceUsage: true,
	}
	command.SetOut(out)
	command.SetErr(errOut)
	flags := command.PersistentFlags()
	flags.StringVar(&options.loadingRules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "the kubeconfig file to use")
	clientcmd.BindOverrideFlags(options.overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	flags.BoolVar(&options.AllMachineTemplates, "all-machine-templates", false,
		"every Metal3MachineTemplate is a template source: set it when the manager runs with --all-machine-templates")
	flags.DurationVar(&options.InspectionStallTimeout, "inspection-stall-timeout", baremetal.DefaultInspectionStallTimeout,
		"how long BMO may keep a host we unpaused registering or inspecting: the manager's flag of the same name")
	flags.StringSliceVar(&options.RamdiskEndpoints, baremetal.RamdiskEndpointsFlag, nil,
		"what the deploy ramdisk must reach without DHCP: the manager's flag of the same name")
	command.AddCommand(newRenderCommand(options), newExplainCommand(options))
	return command
}

func (o *Options) clientConfig() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loadingRules, o.overrides)
}

// namespace is -n, else the kubeconfig context's, else "default".
func (o *Options) namespace() (string, error) {
	if o.overrides.Context.Namespace != "" {
		return o.overrides.Context.Namespace, nil
	}
	namespace, _, err := o.clientConfig().Namespace()
	if clientcmd.IsEmptyConfig(err) {
		// Rendering from files needs no kubeconfig.
		return metav1.NamespaceDefault, nil
	}
	return namespace, err
}

// client connects to the cluster. It reads only: what the controller would
// write goes through a writeRecorder.
func (o *Options) client() (client.WithWatch, error) {
	config := o.restConfig
	if config == nil {
		var err error
		if config, err = o.clientConfig().ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	return client.NewWithWatch(config, client.Options{Scheme: o.scheme})
}
