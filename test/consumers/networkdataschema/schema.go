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

// Package networkdataschema is Ironic's network_data JSON schema as a
// Debian package installs it: a leaf that reads a file and starts no
// process. The tests' Ironic (test/consumers/ironic) reads it from the
// Debian 13 root it runs in (InRoot): the schema of the Ironic that
// validates, Ironic 29.0.5's. Pure packages test what they render without
// the root, against the machine's copy (Path, from Debian 12's
// python3-ironic, Ironic 21.4) as Ironic 29 has it (SchemaWith8023ad):
// the two files differ only in the name of one bond mode, which Ironic 29
// calls 802.3ad where 21.4 said 802.1ad, and test/consumers/ironic checks
// that the machine's copy so renamed is the root's.
package networkdataschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Path is the network_data JSON schema Ironic's API validates against,
// where Debian's python3-ironic installs it (on this machine, and in the
// Debian 13 root under InRoot).
const Path = "/usr/lib/python3/dist-packages/ironic/api/controllers/v1/network-data-schema.json"

// InstallHint says how to get the machine's copy.
const InstallHint = "install the Debian packages the tests need with hack/install-packages.sh (as root, or with sudo)"

// InRoot is the schema's file in a Debian root (the folder of a chroot).
func InRoot(root string) string {
	return filepath.Join(root, Path)
}

// Schema is one schema file, compiled.
type Schema struct {
	// File is where it was read from.
	File     string
	document any
	compiled *jsonschema.Schema
}

// Load reads and compiles a schema file.
func Load(file string) (*Schema, error) {
	document, err := readSchema(file)
	if err != nil {
		return nil, err
	}
	compiled, err := compileSchema(file, document)
	if err != nil {
		return nil, err
	}
	return &Schema{File: file, document: document, compiled: compiled}, nil
}

// Installed is the machine's copy (Path), loaded once.
var Installed = sync.OnceValues(func() (*Schema, error) {
	schema, err := Load(Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, InstallHint)
	}
	return schema, nil
})

// SchemaWith8023ad is the machine's schema as Ironic 29 has it
// (MachineAsIronic29), compiled once. Ironic 21.4's schema (the machine's
// python3-ironic) lists bond mode "802.1ad", which is VLAN stacking, not a
// bond mode, where CAPM3, Linux, cloud-init and glean all say "802.3ad";
// Ironic 29.0.5's (Debian 13's) lists "802.3ad" in its place, and takes
// our 802.3ad bonds as they are (docs/network-data.md).
var SchemaWith8023ad = sync.OnceValues(func() (*jsonschema.Schema, error) {
	document, err := MachineAsIronic29()
	if err != nil {
		return nil, err
	}
	return compileSchema(Path, document)
})

// MachineAsIronic29 is the machine's schema document (Path) with bond mode
// 802.1ad renamed 802.3ad in its list and its example, and nothing else
// changed: Ironic 29.0.5's schema.
func MachineAsIronic29() (any, error) {
	document, err := readSchema(Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, InstallHint)
	}
	if err := rename8021ad(document); err != nil {
		return nil, fmt.Errorf("%s: %w", Path, err)
	}
	return document, nil
}

// ReadDocument reads a schema file as a JSON document, to compare.
func ReadDocument(file string) (any, error) {
	return readSchema(file)
}

func readSchema(file string) (any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ironic's network_data schema: %w", err)
	}
	document, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return document, nil
}

func compileSchema(file string, document any) (*jsonschema.Schema, error) {
	compiler := jsonschema.NewCompiler()
	if err := compiler.AddResource(file, document); err != nil {
		return nil, err
	}
	return compiler.Compile(file)
}

// BondModes are the bond modes the schema allows.
func (s *Schema) BondModes() ([]string, error) {
	enum, err := bondModeEnum(s.document)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	modes := make([]string, 0, len(enum))
	for _, mode := range enum {
		name, ok := mode.(string)
		if !ok {
			return nil, fmt.Errorf("%s: bond mode %v is no string", s.File, mode)
		}
		modes = append(modes, name)
	}
	return modes, nil
}

// bondModeEnum is the object and the enum of definitions.l2_bond's
// bond_mode.
func bondModeEnum(document any) ([]any, error) {
	object, err := bondModeObject(document)
	if err != nil {
		return nil, err
	}
	enum, ok := object["enum"].([]any)
	if !ok || len(enum) == 0 {
		return nil, fmt.Errorf("definitions.l2_bond lists no bond modes: %v; this Ironic is not the one these tests know", object["enum"])
	}
	return enum, nil
}

func bondModeObject(document any) (map[string]any, error) {
	bondMode := document
	for _, key := range []string{"definitions", "l2_bond", "properties", "bond_mode"} {
		object, ok := bondMode.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no object at %s; look again at how the tests handle 802.3ad", key)
		}
		bondMode = object[key]
	}
	object, ok := bondMode.(map[string]any)
	if !ok {
		return nil, errors.New("bond_mode is not an object; look again at how the tests handle 802.3ad")
	}
	return object, nil
}

// rename8021ad writes bond mode 802.1ad as 802.3ad in the bond_mode
// list and examples of a schema document that lists either, and fails on
// any other shape.
func rename8021ad(document any) error {
	object, err := bondModeObject(document)
	if err != nil {
		return err
	}
	enum, err := bondModeEnum(document)
	if err != nil {
		return err
	}
	if !slices.Contains(enum, any("802.1ad")) && !slices.Contains(enum, any("802.3ad")) {
		return fmt.Errorf("unexpected bond modes %v; look again at how the tests handle 802.3ad", enum)
	}
	for _, key := range []string{"enum", "examples"} {
		values, _ := object[key].([]any)
		for i, value := range values {
			if value == "802.1ad" {
				values[i] = "802.3ad"
			}
		}
	}
	return nil
}

// Failures validates a document against the schema and lists the
// failures. In an anyOf or oneOf over link or network kinds only the
// branches of the instance's own type are followed.
func (s *Schema) Failures(networkData map[string]any) ([]string, error) {
	data, err := json.Marshal(networkData)
	if err != nil {
		return nil, err
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var invalid *jsonschema.ValidationError
	err = s.compiled.Validate(instance)
	if err == nil {
		return nil, errors.New("the schema finds nothing wrong")
	}
	if !errors.As(err, &invalid) {
		return nil, fmt.Errorf("validating against the schema: %w", err)
	}
	printer := message.NewPrinter(language.English)
	var failures []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		if alternatives(e) {
			if meant := slices.DeleteFunc(slices.Clone(causes), wrongType); len(meant) > 0 {
				causes = meant
			}
		}
		if len(causes) == 0 {
			failures = append(failures, fmt.Sprintf("/%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer)))
		}
		for _, cause := range causes {
			walk(cause)
		}
	}
	walk(invalid)
	return slices.Compact(failures), nil
}

// wrongType says whether a branch failed on the instance's "type": a
// branch for another kind of link or network.
func wrongType(e *jsonschema.ValidationError) bool {
	if n := len(e.InstanceLocation); n > 0 && e.InstanceLocation[n-1] == "type" {
		switch e.ErrorKind.(type) {
		case *kind.Enum, *kind.Const:
			return true
		}
	}
	return slices.ContainsFunc(e.Causes, func(cause *jsonschema.ValidationError) bool {
		return !alternatives(cause) && wrongType(cause)
	})
}

// alternatives says whether an error is an anyOf or a oneOf, whose causes
// are the failures of each branch.
func alternatives(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		return true
	}
	return false
}
