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

package networkdata

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ErrInvalidInput matches (errors.Is) every error caused by the template or
// the BareMetalHost. Such an error stays until a user changes one of them, so
// retrying without a change is pointless.
var ErrInvalidInput = errors.New("invalid network data input")

// ErrMissingAddress matches (errors.Is) a Render call that lacks the address
// of a pool the template refers to: a bug in the caller, not in the input.
var ErrMissingAddress = errors.New("missing address for a referenced IPPool")

// InputError says which template field is wrong, why, and how to fix it.
type InputError struct {
	Field  string // path in the Metal3DataTemplate, e.g. spec.networkData.links.ethernets[id=eth0].macAddress
	Reason string // what is wrong and the fix
}

func (e *InputError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap lets errors.Is(err, ErrInvalidInput) match.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// MissingAddressError names the pool Render had no address for.
type MissingAddressError struct {
	Pool  string
	Field string
}

func (e *MissingAddressError) Error() string {
	return fmt.Sprintf("%s: no address was given for pool %s; claim an address from every pool Plan.Pools and Plan.ClusterAPIPools return before calling Render",
		e.Field, quote(e.Pool))
}

// Unwrap lets errors.Is(err, ErrMissingAddress) match.
func (e *MissingAddressError) Unwrap() error { return ErrMissingAddress }

// IsInputError reports whether err comes from the template or the host.
func IsInputError(err error) bool { return errors.Is(err, ErrInvalidInput) }

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

const root = "spec.networkData"

// item names one list entry in a field path: by id when it has one, so the
// user finds it in the template, else by index.
func item(list string, i int, id string) string {
	if id == "" {
		return list + "[" + strconv.Itoa(i) + "]"
	}
	return list + "[id=" + plain(id) + "]"
}

// plain keeps a user value readable in a one-line message, quoting it only
// when it contains characters that would make the message ambiguous.
func plain(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(`"[]=,;`, r)
	}) {
		return s
	}
	return strconv.Quote(s)
}

// quote always quotes a user value; strconv.Quote also escapes newlines, so
// messages stay on one line.
func quote(s string) string { return strconv.Quote(s) }
