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
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
)

// section is a titled part of the report: some words, a table, or both. The
// same sections are printed as text and written as Markdown.
type section struct {
	title string
	notes []string
	table table
}

type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (s section) text(w *bytes.Buffer) {
	fmt.Fprintf(w, "\n== %s\n", s.title)
	for _, note := range s.notes {
		fmt.Fprintln(w, note)
	}
	if len(s.table.header) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{s.table.header}, s.table.rows...) {
		// Writing into a buffer cannot fail.
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	_ = tw.Flush()
}

func (s section) markdown(w *bytes.Buffer) {
	fmt.Fprintf(w, "\n#### %s\n\n", s.title)
	for _, note := range s.notes {
		fmt.Fprintln(w, note)
	}
	if len(s.notes) > 0 {
		fmt.Fprintln(w)
	}
	if len(s.table.header) == 0 {
		return
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(s.table.header, " | "))
	align := make([]string, len(s.table.header))
	for i := range align {
		align[i] = "---:"
	}
	align[0] = "---"
	fmt.Fprintf(w, "| %s |\n", strings.Join(align, " | "))
	for _, row := range s.table.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}
