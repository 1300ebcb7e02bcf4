package networkdata

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// ironicSchemaFile is Ironic's network_data schema, which its API validates a
// node's network_data against (HTTP 400 "Invalid network_data" otherwise).
// Debian's ironic-api package installs it; hack/install-packages.sh installs
// that package.
const (
	ironicSchemaFile = "network-data-schema.json"
	debianIronicV1   = "/usr/lib/python3/dist-packages/ironic/api/controllers/v1"
)

var (
	loadSchema   sync.Once
	ironicSchema *jsonschema.Schema
	schemaErr    error
)

// requireValidForIronic fails the test unless doc is valid under Ironic's
// network_data schema, read from the installed package.
func requireValidForIronic(t require.TestingT, doc []byte) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	loadSchema.Do(func() { ironicSchema, schemaErr = compileIronicSchema() })
	require.NoError(t, schemaErr)
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	require.NoError(t, ironicSchema.Validate(instance), "Ironic's API would refuse this network_data: %s", doc)
}

func compileIronicSchema() (*jsonschema.Schema, error) {
	path, err := ironicSchemaPath()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	schema, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := allow8023ad(schema); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	compiler := jsonschema.NewCompiler()
	if err := compiler.AddResource(path, schema); err != nil {
		return nil, err
	}
	return compiler.Compile(path)
}

// ironicSchemaPath finds the schema of the installed ironic-api package: at
// Debian's path, else where Python imports Ironic from. It never skips: a
// test that cannot check against Ironic must fail and say how to fix it.
func ironicSchemaPath() (string, error) {
	candidates := []string{filepath.Join(debianIronicV1, ironicSchemaFile)}
	if _, err := os.Stat(candidates[0]); err == nil {
		return candidates[0], nil
	}
	out, err := exec.Command("python3", "-c", "import ironic.api.controllers.v1 as m, os; print(os.path.dirname(m.__file__))").Output()
	if err == nil {
		path := filepath.Join(strings.TrimSpace(string(out)), ironicSchemaFile)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		candidates = append(candidates, path)
	}
	return "", fmt.Errorf("Ironic's network_data schema is not installed (looked for %s, and for Python's ironic package): "+
		"run hack/install-packages.sh, which installs Debian's ironic-api package", strings.Join(candidates, ", "))
}

// allow8023ad adds bond mode 802.3ad to the schema's bond modes, and changes
// nothing else. Ironic 21.4's schema (Debian's) lists "802.1ad", which is
// VLAN stacking, not a bond mode, where CAPM3, Linux, cloud-init and glean
// all say "802.3ad"; we render CAPM3's 802.3ad as it is. So Ironic 21.4's
// API refuses any bond in 802.3ad mode, and only an Ironic whose schema says
// 802.3ad accepts it (docs/network-data.md). Every other bond mode, and
// every other rule, is checked as the installed schema has it.
func allow8023ad(schema any) error {
	bondMode := schema
	for _, key := range []string{"definitions", "l2_bond", "properties", "bond_mode"} {
		object, ok := bondMode.(map[string]any)
		if !ok {
			return fmt.Errorf("no object at %s; look again at how this test handles 802.3ad", key)
		}
		bondMode = object[key]
	}
	object, ok := bondMode.(map[string]any)
	if !ok {
		return errors.New("bond_mode is not an object; look again at how this test handles 802.3ad")
	}
	enum, ok := object["enum"].([]any)
	if !ok || !slices.Contains(enum, any("802.1ad")) && !slices.Contains(enum, any("802.3ad")) {
		return fmt.Errorf("unexpected bond modes %v; look again at how this test handles 802.3ad", object["enum"])
	}
	if !slices.Contains(enum, any("802.3ad")) {
		object["enum"] = append(enum, "802.3ad")
	}
	return nil
}
