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

package expectations

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestBehind(t *testing.T) {
	key := Key{Kind: "IPClaim", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "host-0-provisioning"}}
	tests := []struct {
		name          string
		wroteOver     string
		elapsed       time.Duration
		cachedVersion string
		wantBehind    bool
		wantLeft      time.Duration
	}{
		{name: "created, cache does not have it yet", wroteOver: "", elapsed: time.Second, cachedVersion: "", wantBehind: true, wantLeft: 9 * time.Second},
		{name: "created, cache has it", wroteOver: "", elapsed: time.Second, cachedVersion: "42"},
		{name: "patched, cache still shows the old version", wroteOver: "41", elapsed: 2 * time.Second, cachedVersion: "41", wantBehind: true, wantLeft: 8 * time.Second},
		{name: "patched, cache shows the new version", wroteOver: "41", elapsed: time.Second, cachedVersion: "42"},
		{name: "patched, object gone from the cache", wroteOver: "41", elapsed: time.Second, cachedVersion: ""},
		{name: "created, timed out", wroteOver: "", elapsed: 10 * time.Second, cachedVersion: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			w := &Writes{Timeout: 10 * time.Second, Now: c.now}
			w.Wrote(key, tt.wroteOver)
			c.advance(tt.elapsed)

			left, behind := w.Behind(key, tt.cachedVersion)
			assert.Equal(t, tt.wantBehind, behind)
			assert.Equal(t, tt.wantLeft, left)
			if !tt.wantBehind {
				_, stillBehind := w.Behind(key, tt.wroteOver)
				assert.False(t, stillBehind, "a write is forgotten once the cache has caught up or it timed out")
			}
		})
	}
}

func TestUnknownObjectIsNotBehind(t *testing.T) {
	var w Writes
	_, behind := w.Behind(Key{Kind: "IPClaim", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "never-written"}}, "")
	assert.False(t, behind)
}

// One store holds the writes of every kind: a create of one kind says
// nothing about an object of another kind under the same name.
func TestKindsAreApart(t *testing.T) {
	var w Writes
	name := types.NamespacedName{Namespace: "ns", Name: "host-0"}
	host := Key{Kind: "BareMetalHost", NamespacedName: name}
	w.Wrote(host, "41")
	w.Wrote(Key{Kind: "IPClaim", NamespacedName: name}, "")

	_, behind := w.Behind(Key{Kind: "Secret", NamespacedName: name}, "")
	assert.False(t, behind, "a Secret nobody wrote")
	_, behind = w.Behind(host, "41")
	assert.True(t, behind, "the host's patch")
	_, behind = w.Behind(Key{Kind: "IPClaim", NamespacedName: name}, "")
	assert.True(t, behind, "the claim's create")
}

// A host registered again under its name (a new UID) waits for none of
// the earlier host's writes, though its objects have the same names.
func TestHostsOfTheSameNameAreApart(t *testing.T) {
	var w Writes
	secret := types.NamespacedName{Namespace: "ns", Name: "host-0-preprov-networkdata"}
	w.Wrote(Key{Kind: "Secret", NamespacedName: secret, Host: "uid-earlier"}, "")

	_, behind := w.Behind(Key{Kind: "Secret", NamespacedName: secret, Host: "uid-again"}, "")
	assert.False(t, behind, "the host registered again")
	_, behind = w.Behind(Key{Kind: "Secret", NamespacedName: secret, Host: "uid-earlier"}, "")
	assert.True(t, behind, "the earlier host")
}

func TestWroteForgetsExpiredWritesNobodyReads(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	w := &Writes{Timeout: 10 * time.Second, Now: c.now}
	deleted := Key{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "deleted-host-preprov-networkdata"}}
	w.Wrote(deleted, "")
	c.advance(11 * time.Second)
	w.Wrote(Key{Kind: "BareMetalHost", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "other-host"}}, "")

	assert.NotContains(t, w.pending, deleted)
	assert.Len(t, w.pending, 1)
}

func TestForget(t *testing.T) {
	var w Writes
	key := Key{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "host-0-preprov-networkdata"}}
	w.Wrote(key, "")
	w.Forget(key)
	_, behind := w.Behind(key, "")
	assert.False(t, behind)
}
