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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// HostCounts is how the hosts of one template stand.
type HostCounts struct {
	Matched, Ready, Waiting, Failed, Conflicting, Orphaned, Drifted, Stalled int32
	// Unreachable counts the failed hosts kept paused because their ramdisk
	// could not reach its endpoints.
	Unreachable int32
}

// Problem says what makes a template itself unusable, if anything: what the
// webhook refuses, a data template that cannot be used, network data no
// host can render.
func (t *Templates) Problem(ctx context.Context, namespace string, view template.Template) (string, error) {
	if view.Invalid != "" {
		return "the template selects no host until it is fixed: " + view.Invalid, nil
	}
	networkData, err := t.NetworkData(ctx, namespace, view)
	if err != nil {
		var templateErr *template.Error
		if errors.As(err, &templateErr) {
			return templateErr.Message, nil
		}
		return "", err
	}
	// Problems no host can fix; a Metal3DataTemplate has no webhook of ours.
	if problems := networkdata.ValidateTemplate(networkData, view.NetworkDataOptions()...); len(problems) > 0 {
		messages := make([]string, 0, len(problems))
		for _, problem := range problems {
			messages = append(messages, problem.Error())
		}
		return "invalid network data: " + strings.Join(messages, "; "), nil
	}
	return "", nil
}

// ReadyCondition is a template's Ready condition: false while the template
// is invalid or any of its hosts conflicts, fails or waits.
func ReadyCondition(counts HostCounts, problem string) metav1.Condition {
	condition := metav1.Condition{Type: preprovv1.ReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case problem != "":
		condition.Reason, condition.Message = preprovv1.InvalidTemplateReason, problem
	case counts.Conflicting > 0:
		condition.Reason = preprovv1.HostsConflictingReason
		condition.Message = fmt.Sprintf("%d of %d hosts are selected by another template too and are left untouched; "+
			"see the Warning events on the hosts", counts.Conflicting, counts.Matched)
	case counts.Failed > 0 && counts.Unreachable == counts.Failed:
		condition.Reason = preprovv1.EndpointsUnreachableReason
		condition.Message = fmt.Sprintf("%d of %d hosts are kept paused: their network data gives the deploy ramdisk no way "+
			"to the endpoints it must reach without DHCP; see their %s Warning events", counts.Unreachable, counts.Matched,
			ReasonEndpointUnreachable)
	case counts.Failed > 0:
		condition.Reason = preprovv1.HostsFailedReason
		condition.Message = fmt.Sprintf("%d of %d hosts need a fix; see the Warning events on the hosts", counts.Failed, counts.Matched)
	case counts.Waiting > 0:
		condition.Reason = preprovv1.HostsWaitingReason
		condition.Message = fmt.Sprintf("%d of %d hosts are waiting for IP addresses", counts.Waiting, counts.Matched)
	case counts.Matched == 0:
		condition.Status, condition.Reason, condition.Message = metav1.ConditionTrue, preprovv1.NoHostsReason, "no host is selected yet"
	default:
		condition.Status, condition.Reason = metav1.ConditionTrue, preprovv1.ReadyReason
		condition.Message = fmt.Sprintf("all %d hosts have their network data", counts.Matched)
		if counts.Stalled > 0 {
			condition.Message += fmt.Sprintf("; %d of them do not get past inspection (see their %s Warning events)",
				counts.Stalled, ReasonInspectionStalled)
		}
	}
	return condition
}

// UpToDateCondition is a template's NetworkDataUpToDate condition: false
// while provisioned hosts keep older network data.
func UpToDateCondition(counts HostCounts) metav1.Condition {
	if counts.Drifted > 0 {
		return metav1.Condition{
			Type: preprovv1.NetworkDataUpToDateCondition, Status: metav1.ConditionFalse, Reason: preprovv1.DriftedReason,
			Message: fmt.Sprintf("%d provisioned hosts keep network data older than this template (provisionedHostPolicy: ReportDrift)", counts.Drifted),
		}
	}
	return metav1.Condition{Type: preprovv1.NetworkDataUpToDateCondition, Status: metav1.ConditionTrue, Reason: preprovv1.UpToDateReason}
}
