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

package webhooks

import (
	"context"
	"net/http"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"gomodules.xyz/jsonpatch/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// The configuration's namespaceSelector (preprovisioning.metal3.io/auto-pause:
// "true") is a kustomize patch in config/webhook: controller-gen's marker has
// no field for it. failurePolicy=fail, as BMO's and CAPM3's webhooks: while
// the webhook is unreachable no host can be created in an opted-in namespace,
// rather than one being created unpaused and inspected without network data.
// +kubebuilder:webhook:path=/mutate-metal3-io-v1alpha1-baremetalhost,mutating=true,failurePolicy=fail,sideEffects=None,groups=metal3.io,resources=baremetalhosts,verbs=create,versions=v1alpha1,name=auto-pause.preprovisioning.metal3.io,admissionReviewVersions=v1

const autoPausePath = "/mutate-metal3-io-v1alpha1-baremetalhost"

// autoPauser pauses a BareMetalHost for preprovisioning when it is created
// without a pause and without pre-provisioning network data, so BMO does not
// start registering and inspecting it before we have set it up. It answers
// with the one patch operation that adds the annotation, not a patch computed
// from our copy of BMO's types, which could drop or rewrite fields of a
// newer BareMetalHost CRD.
type autoPauser struct {
	decoder admission.Decoder
}

func (p autoPauser) Handle(ctx context.Context, req admission.Request) admission.Response {
	host := &bmov1alpha1.BareMetalHost{}
	if err := p.decoder.Decode(req, host); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if _, paused := host.Annotations[preprovv1.PausedAnnotation]; paused {
		return admission.Allowed("the host is paused already")
	}
	if host.Spec.PreprovisioningNetworkDataName != "" {
		return admission.Allowed("the host has pre-provisioning network data already")
	}
	ctrl.LoggerFrom(ctx).Info("Pausing a new BareMetalHost for preprovisioning: its namespace is labelled "+
		preprovv1.AutoPauseLabel+"="+preprovv1.AutoPauseLabelValue, "namespace", req.Namespace, "name", host.Name)
	return admission.Patched("paused for preprovisioning", pauseOperation(host.Annotations))
}

// pauseOperation adds the pause to the annotations, or adds the annotations
// with the pause when the host has none.
func pauseOperation(annotations map[string]string) jsonpatch.JsonPatchOperation {
	if annotations == nil {
		return jsonpatch.NewOperation("add", "/metadata/annotations",
			map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning})
	}
	// A "/" in a JSON pointer's key is written "~1" (RFC 6901).
	key := strings.ReplaceAll(preprovv1.PausedAnnotation, "/", "~1")
	return jsonpatch.NewOperation("add", "/metadata/annotations/"+key, preprovv1.PausedForPreprovisioning)
}
