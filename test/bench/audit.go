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
	"fmt"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// auditPolicy records, for the managers and the floor only, one event per
// request once it completes, with metadata and no bodies: who did what to
// which resource, the response code and when. Gets and lists are kept to
// show what the manager reads past its cache. Watches are left out, but for
// the shard scenario's managers, whose informers list by watching
// (sendInitialEvents): their watches are recorded when they start, so the
// audit log shows each watch's label selector.
var auditPolicy = fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  users: [%[1]q, %[2]q, %[3]q, %[4]q]
  verbs: [create, update, patch, delete, deletecollection, get, list]
  omitStages: [RequestReceived, ResponseStarted]
- level: Metadata
  users: [%[3]q, %[4]q]
  verbs: [watch]
  omitStages: [RequestReceived, ResponseComplete]
- level: None
`, managerUser, floorUser, shardUser(shardNames[0]), shardUser(shardNames[1]))

// apiCall is a kind of request: verb, resource (with its subresource) and
// whether the API server refused it.
type apiCall struct {
	Verb     string
	Resource string
	Failed   bool
}

func (c apiCall) write() bool { return framework.IsWriteVerb(c.Verb) }

func (c apiCall) String() string {
	s := c.Verb + " " + c.Resource
	if c.Failed {
		s += " (refused)"
	}
	return s
}

// auditWindow selects the requests of one user, in one namespace ("" for
// any) received in [from, to).
type auditWindow struct {
	user      string
	namespace string
	from, to  time.Time
}

// count counts the requests in the window by kind.
func (w auditWindow) count(events []framework.AuditEvent) map[apiCall]int {
	counts := map[apiCall]int{}
	for _, event := range events {
		if event.User.Username != w.user || event.ObjectRef == nil ||
			event.RequestReceived.Before(w.from) || !event.RequestReceived.Before(w.to) {
			continue
		}
		if w.namespace != "" && event.ObjectRef.Namespace != w.namespace {
			continue
		}
		failed := event.ResponseStatus != nil && event.ResponseStatus.Code >= 300
		counts[apiCall{Verb: event.Verb, Resource: event.Resource(), Failed: failed}]++
	}
	return counts
}
