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
	"math/rand/v2"
	"slices"
	"strings"
)

// The fleet's shape: few enough names, pools and groups that hosts collide
// on them all the time.
const (
	hostNames = 16
	groups    = 4
	pools     = 5
	// minPool and maxPool bound a pool's size.
	minPool = 1
	maxPool = 10
)

type opKind string

const (
	opRegister             opKind = "register"
	opDelete               opKind = "delete"
	opRecreate             opKind = "recreate"
	opRelabel              opKind = "relabel"
	opRollTemplate         opKind = "roll-template"
	opEditTemplate         opKind = "edit-template"
	opResizePool           opKind = "resize-pool"
	opInspect              opKind = "inspect"
	opProvision            opKind = "provision"
	opReleaseClaim         opKind = "delete-hostclaim"
	opDeprovision          opKind = "deprovision"
	opPower                opKind = "power"
	opKillManager          opKind = "kill-manager"
	opStartManager         opKind = "start-manager"
	opStopIPAM             opKind = "stop-ipam"
	opStartIPAM            opKind = "start-ipam"
	opQuietPoint           opKind = "quiet-point"
	provisionByHand               = "by-hand"
	provisionHostClaim            = "hostclaim"
	provisionMetal3Data           = "metal3data"
	provisionNoDataTemplat        = "metal3machine-without-datatemplate"
	editPool                      = "pool"
	editMTU                       = "mtu"
	editPolicy                    = "policy"
)

var provisionModes = []string{provisionByHand, provisionHostClaim, provisionMetal3Data, provisionNoDataTemplat}

// op is one operation of the sequence. Which fields count depends on kind.
type op struct {
	kind  opKind
	hosts []string
	// group is a template group, -1 for none (a host no template selects).
	group int
	// pool is a pool index; size a pool size.
	pool, size int
	// variant says how: the provisioning mode, what an edit changes, whether
	// a roll creates the new template first, power on or off.
	variant string
	// index is the first MAC index of new hosts; version a template's.
	index, version int
}

func (o op) String() string {
	parts := []string{string(o.kind)}
	if len(o.hosts) > 0 {
		parts = append(parts, strings.Join(o.hosts, ","))
	}
	switch o.kind {
	case opRegister, opRecreate:
		parts = append(parts, fmt.Sprintf("group=%s mac-index=%d", groupName(o.group), o.index))
	case opRelabel:
		parts = append(parts, "group="+groupName(o.group))
	case opRollTemplate, opEditTemplate:
		parts = append(parts, fmt.Sprintf("%s v%d %s pool=%s", groupName(o.group), o.version, o.variant, poolName(o.pool)))
	case opResizePool:
		parts = append(parts, fmt.Sprintf("%s size=%d", poolName(o.pool), o.size))
	case opProvision:
		parts = append(parts, fmt.Sprintf("%s pool=%s seq=%d", o.variant, poolName(o.pool), o.index))
	case opPower:
		parts = append(parts, o.variant)
	}
	return strings.Join(parts, " ")
}

func groupName(group int) string {
	if group < 0 {
		return "none"
	}
	return fmt.Sprintf("g%d", group)
}

func poolName(pool int) string { return fmt.Sprintf("pool-%d", pool) }

func hostName(index int) string { return fmt.Sprintf("h%02d", index) }

// templateGroup is a group's template as the plan has made it.
type templateGroup struct {
	version int
	pool    int
	mtu     int
	update  bool
}

// book is what the plan has done so far, from its own operations only, never
// from the cluster: so the sequence depends on the seed alone.
type book struct {
	hosts     map[string]int // existing host names -> group
	nextMAC   int
	templates [groups]templateGroup
	poolSizes [pools]int
	managerUp bool
	ipamUp    bool
	// untilQuiet counts the operations to the next quiet point.
	untilQuiet int
	nextSeq    int
}

// planner draws the operations from one random source in a fixed order.
type planner struct {
	rng  *rand.Rand
	book book
}

func newPlanner(seed uint64) *planner {
	p := &planner{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), book: book{hosts: map[string]int{}, managerUp: true, ipamUp: true}}
	for g := range groups {
		p.book.templates[g] = templateGroup{version: 1, pool: g, mtu: 1500, update: p.rng.IntN(2) == 0}
	}
	for i := range pools {
		p.book.poolSizes[i] = 3 + p.rng.IntN(5)
	}
	p.book.untilQuiet = p.quietGap()
	return p
}

func (p *planner) quietGap() int { return 3 + p.rng.IntN(6) }

// weighted draws are made from this table in its order.
var weights = []struct {
	kind   opKind
	weight int
}{
	{opRegister, 12}, {opDelete, 4}, {opRecreate, 4}, {opRelabel, 5}, {opRollTemplate, 3}, {opEditTemplate, 4},
	{opResizePool, 5}, {opInspect, 4}, {opProvision, 14}, {opReleaseClaim, 4}, {opDeprovision, 7}, {opPower, 4},
	{opKillManager, 2}, {opStopIPAM, 2},
}

// next is the next operation.
func (p *planner) next() op {
	if p.book.untilQuiet == 0 {
		p.book.untilQuiet = p.quietGap()
		p.book.managerUp, p.book.ipamUp = true, true
		return op{kind: opQuietPoint}
	}
	p.book.untilQuiet--
	// A process that is down comes back after an operation or a few.
	if !p.book.managerUp && p.rng.IntN(2) == 0 {
		p.book.managerUp = true
		return op{kind: opStartManager}
	}
	if !p.book.ipamUp && p.rng.IntN(2) == 0 {
		p.book.ipamUp = true
		return op{kind: opStartIPAM}
	}
	total := 0
	for _, w := range weights {
		total += w.weight
	}
	draw := p.rng.IntN(total)
	for _, w := range weights {
		if draw < w.weight {
			if o, ok := p.make(w.kind); ok {
				return o
			}
			break
		}
		draw -= w.weight
	}
	// Nothing to do for that kind: register a host, or with every name
	// taken delete one.
	if o, ok := p.make(opRegister); ok {
		return o
	}
	o, _ := p.make(opDelete)
	return o
}

func (p *planner) make(kind opKind) (op, bool) {
	switch kind {
	case opRegister:
		return p.register()
	case opRollTemplate, opEditTemplate:
		return p.template(kind), true
	case opResizePool:
		pool := p.rng.IntN(pools)
		size := max(minPool, min(maxPool, p.book.poolSizes[pool]+[]int{-2, -1, 1, 2, 3}[p.rng.IntN(5)]))
		p.book.poolSizes[pool] = size
		return op{kind: kind, pool: pool, size: size}, true
	case opKillManager:
		if !p.book.managerUp {
			return op{}, false
		}
		p.book.managerUp = false
		return op{kind: kind}, true
	case opStopIPAM:
		if !p.book.ipamUp {
			return op{}, false
		}
		p.book.ipamUp = false
		return op{kind: kind}, true
	}
	return p.hostOp(kind)
}

func (p *planner) register() (op, bool) {
	var free []string
	for i := range hostNames {
		if _, exists := p.book.hosts[hostName(i)]; !exists {
			free = append(free, hostName(i))
		}
	}
	if len(free) == 0 {
		return op{}, false
	}
	count := 1
	if p.rng.IntN(2) == 0 {
		count = min(len(free), 2+p.rng.IntN(4))
	}
	p.rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	names := free[:count]
	slices.Sort(names)
	o := op{kind: opRegister, hosts: names, group: p.drawGroup(), index: p.book.nextMAC}
	for _, name := range names {
		p.book.hosts[name] = o.group
	}
	p.book.nextMAC += count
	return o, true
}

// drawGroup is a group, or none for one host in eight.
func (p *planner) drawGroup() int {
	if p.rng.IntN(8) == 0 {
		return -1
	}
	return p.rng.IntN(groups)
}

func (p *planner) template(kind opKind) op {
	group := p.rng.IntN(groups)
	t := &p.book.templates[group]
	o := op{kind: kind, group: group}
	var variant string
	if kind == opRollTemplate {
		variant = []string{"create-first", "delete-first"}[p.rng.IntN(2)]
	} else {
		variant = []string{editPool, editMTU, editPolicy}[p.rng.IntN(3)]
	}
	if kind == opRollTemplate || variant == editPool {
		t.pool = (t.pool + 1 + p.rng.IntN(pools-1)) % pools
	}
	switch {
	case kind == opRollTemplate:
		t.version++
	case variant == editMTU:
		t.mtu = []int{1500, 9000}[p.rng.IntN(2)]
	case variant == editPolicy:
		t.update = !t.update
	}
	o.variant, o.version, o.pool = variant, t.version, t.pool
	return o
}

func (p *planner) hostOp(kind opKind) (op, bool) {
	names := make([]string, 0, len(p.book.hosts))
	for name := range p.book.hosts {
		names = append(names, name)
	}
	if len(names) == 0 {
		return op{}, false
	}
	slices.Sort(names)
	name := names[p.rng.IntN(len(names))]
	o := op{kind: kind, hosts: []string{name}, group: p.book.hosts[name]}
	switch kind {
	case opDelete:
		delete(p.book.hosts, name)
	case opRecreate:
		o.index = p.book.nextMAC
		p.book.nextMAC++
	case opRelabel:
		o.group = p.drawGroup()
		p.book.hosts[name] = o.group
	case opProvision:
		o.variant = provisionModes[p.rng.IntN(len(provisionModes))]
		o.pool = p.rng.IntN(pools)
		if o.group >= 0 {
			o.pool = p.book.templates[o.group].pool
		}
		o.index = p.book.nextSeq
		p.book.nextSeq++
	case opPower:
		o.variant = []string{"off", "on"}[p.rng.IntN(2)]
	}
	return o, true
}
