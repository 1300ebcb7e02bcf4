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

package docs_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// docCommand is a shell command as a document shows it.
type docCommand struct {
	// file is the document's path from the repository root, line the line
	// the command starts on.
	file string
	line int
	text string
}

func (c docCommand) String() string {
	return c.file + ":" + strconv.Itoa(c.line) + ": " + c.text
}

var (
	fence = regexp.MustCompile("^\\s*```\\s*(\\S*)")
	// inlineCode is a code span; it may continue on the next line.
	inlineCode = regexp.MustCompile("`([^`]+)`")
	// commandSpan is a code span that is a command (not, say, a label
	// named clusterctl.cluster.x-k8s.io/move).
	commandSpan = regexp.MustCompile(`^((kubectl|clusterctl|make)( |$)|hack/|go )`)
)

// extractCommands returns the commands of a Markdown document: every line of
// its sh, bash and console blocks (a console block's lines that start with
// "$ "), with backslash continuations joined, and every code span outside
// blocks that starts with kubectl, clusterctl, make, hack/ or "go ".
func extractCommands(file, markdown string) []docCommand {
	var commands []docCommand
	lines := strings.Split(markdown, "\n")
	// prose is the document with its blocks blanked, so code spans keep
	// their line numbers and never pair a backtick inside a block.
	prose := make([]string, len(lines))
	inBlock, language := false, ""
	var pending *docCommand
	for i, line := range lines {
		if match := fence.FindStringSubmatch(line); match != nil {
			inBlock, language = !inBlock, match[1]
			continue
		}
		if !inBlock {
			prose[i] = line
			continue
		}
		text := strings.TrimSpace(line)
		if pending == nil {
			switch {
			case language == "console" && strings.HasPrefix(text, "$ "):
				text = strings.TrimPrefix(text, "$ ")
			case language == "sh" || language == "bash":
			default:
				continue
			}
			if text == "" {
				continue
			}
			pending = &docCommand{file: file, line: i + 1}
		}
		text = withoutComment(text)
		joined, continued := strings.CutSuffix(text, "\\")
		pending.text = strings.TrimSpace(pending.text + " " + strings.TrimSpace(joined))
		if !continued {
			commands = append(commands, *pending)
			pending = nil
		}
	}

	text := strings.Join(prose, "\n")
	for _, match := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[match[2]:match[3]]), " ")
		if commandSpan.MatchString(span) {
			line := strings.Count(text[:match[0]], "\n") + 1
			commands = append(commands, docCommand{file: file, line: line, text: span})
		}
	}
	return commands
}

// shellComment is a comment at the end of a line of a shell block.
var shellComment = regexp.MustCompile(`\s+#\s.*$`)

// withoutComment drops a line's trailing comment, unless its # is quoted.
func withoutComment(line string) string {
	location := shellComment.FindStringIndex(line)
	if location == nil {
		return line
	}
	before := line[:location[0]]
	if strings.Count(before, "'")%2 == 1 || strings.Count(before, `"`)%2 == 1 {
		return line
	}
	return before
}

func TestExtractCommands(t *testing.T) {
	markdown := "# Title\n" +
		"Run `make run`, then `kubectl get\n" +
		"bmh -n metal3`; the label `clusterctl.cluster.x-k8s.io/move` is no command.\n" +
		"```sh\n" +
		"make test   # every test\n" +
		"clusterctl generate cluster edge \\\n" +
		"  --flavor dhcpless > edge.yaml\n" +
		"kubectl get bmh -o jsonpath='{.items[*].metadata.annotations.a # b}'\n" +
		"```\n" +
		"```yaml\n" +
		"kubectl: no\n" +
		"```\n" +
		"```console\n" +
		"$ kubectl get m3ppt -A\n" +
		"NAMESPACE   NAME\n" +
		"```\n" +
		"`go test ./...` and `hack/run`, not `gofmt` nor `golangci-lint`.\n"
	assert.Equal(t, []docCommand{
		{file: "a.md", line: 5, text: "make test"},
		{file: "a.md", line: 6, text: "clusterctl generate cluster edge --flavor dhcpless > edge.yaml"},
		{file: "a.md", line: 8, text: "kubectl get bmh -o jsonpath='{.items[*].metadata.annotations.a # b}'"},
		{file: "a.md", line: 14, text: "kubectl get m3ppt -A"},
		{file: "a.md", line: 2, text: "make run"},
		{file: "a.md", line: 2, text: "kubectl get bmh -n metal3"},
		{file: "a.md", line: 17, text: "go test ./..."},
		{file: "a.md", line: 17, text: "hack/run"},
	}, extractCommands("a.md", markdown))
}
