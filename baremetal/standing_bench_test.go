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

package baremetal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// listedObjects is a client.Reader that lists what it holds, copying the
// items into the list as the manager's cache does when asked not to deep
// copy them.
type listedObjects struct {
	hosts     []bmov1alpha1.BareMetalHost
	templates []capm3.Metal3MachineTemplate
}

func (l *listedObjects) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the hosts metric only lists")
}

func (l *listedObjects) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch list := list.(type) {
	case *bmov1alpha1.BareMetalHostList:
		list.Items = append(list.Items[:0], l.hosts...)
	case *capm3.Metal3MachineTemplateList:
		list.Items = append(list.Items[:0], l.templates...)
	case *preprovv1.Metal3PreprovisioningTemplateList:
		list.Items = nil // the fleet's templates are all Metal3MachineTemplates
	default:
		return fmt.Errorf("unexpected list %T", list)
	}
	return nil
}

// BenchmarkCountAll is what one scrape of the hosts metric costs the leader
// at 5000 set-up hosts in four racks, one opted-in Metal3MachineTemplate per
// rack: the manager walks every cached host at each scrape.
func BenchmarkCountAll(b *testing.B) {
	const hosts, racks = 5000, 4
	objects := &listedObjects{}
	for rack := range racks {
		objects.templates = append(objects.templates, capm3.Metal3MachineTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: "metal3", Name: fmt.Sprintf("rack-%d", rack),
				Annotations: map[string]string{preprovv1.EnabledAnnotation: "true"}},
			Spec: capm3.Metal3MachineTemplateSpec{Template: capm3.Metal3MachineTemplateResource{Spec: capm3.Metal3MachineSpec{
				HostSelector: &capm3.HostSelector{MatchLabels: map[string]string{"rack": strconv.Itoa(rack)}},
			}}},
		})
	}
	for i := range hosts {
		rack := i % racks
		objects.hosts = append(objects.hosts, bmov1alpha1.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "metal3", Name: fmt.Sprintf("host-%05d", i),
				Labels: map[string]string{"rack": strconv.Itoa(rack), preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
				Annotations: map[string]string{
					preprovv1.TemplateAnnotation: template.Ref{Kind: preprovv1.KindMachineTemplate, Name: fmt.Sprintf("rack-%d", rack)}.String(),
				},
			},
			Spec: bmov1alpha1.BareMetalHostSpec{BMC: bmov1alpha1.BMCDetails{Address: "redfish-virtualmedia://192.0.2.1/redfish/v1/Systems/1"}},
		})
	}
	standings := &Standings{Reader: objects, Templates: &Templates{Reader: objects}}
	b.ReportAllocs()
	for b.Loop() {
		counts, err := standings.CountAll(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if ready := counts[metrics.HostGroup{Phase: string(PhaseReady)}]; ready != hosts {
			b.Fatalf("%d hosts counted ready, want %d: %v", ready, hosts, counts)
		}
	}
}
