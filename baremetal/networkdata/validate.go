package networkdata

import (
	"strconv"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// checkLinks returns the link ids with their fields, or the first problem
// linkErrors finds.
func checkLinks(l capm3.NetworkDataLink) (map[string]string, error) {
	ids, errs := linkErrors(l)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return ids, nil
}

// linkErrors checks that link ids are set and unique and that bonds and vlans
// only refer to defined links. It returns the link ids with their fields and
// every problem, in template order.
func linkErrors(l capm3.NetworkDataLink) (map[string]string, []error) {
	ids := make(map[string]string, len(l.Bonds)+len(l.Ethernets)+len(l.Vlans))
	var errs []error
	add := func(field, id string) {
		if id == "" {
			errs = append(errs, inputErr(field+".id", "is empty; give every link a unique id"))
			return
		}
		if other, dup := ids[id]; dup {
			errs = append(errs, inputErr(field+".id", "link id %s is also used by %s; link ids must be unique across ethernets, bonds and vlans", quote(id), other))
			return
		}
		ids[id] = field
	}
	for i, b := range l.Bonds {
		add(item(root+".links.bonds", i, b.Id), b.Id)
	}
	for i, e := range l.Ethernets {
		add(item(root+".links.ethernets", i, e.Id), e.Id)
	}
	for i, v := range l.Vlans {
		add(item(root+".links.vlans", i, v.Id), v.Id)
	}
	for i, b := range l.Bonds {
		field := item(root+".links.bonds", i, b.Id)
		for j, member := range b.BondLinks {
			if err := checkLinkRef(ids, field+".bondLinks["+strconv.Itoa(j)+"]", member, b.Id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i, v := range l.Vlans {
		if err := checkLinkRef(ids, item(root+".links.vlans", i, v.Id)+".vlanLink", v.VlanLink, v.Id); err != nil {
			errs = append(errs, err)
		}
	}
	return ids, errs
}

// checkNetworks returns the first problem networkErrors finds.
func checkNetworks(nets []networkSpec, links map[string]string) error {
	if errs := networkErrors(nets, links); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// networkErrors checks that network ids are set and unique and that every
// network sits on a defined link. It returns every problem, in template order.
func networkErrors(nets []networkSpec, links map[string]string) []error {
	ids := make(map[string]string, len(nets))
	var errs []error
	for _, n := range nets {
		switch other, dup := ids[n.id]; {
		case n.id == "":
			errs = append(errs, inputErr(n.field+".id", "is empty; give every network a unique id"))
		case dup:
			errs = append(errs, inputErr(n.field+".id", "network id %s is also used by %s; network ids must be unique across all network types", quote(n.id), other))
		default:
			ids[n.id] = n.field
		}
		if err := checkLinkRef(links, n.field+".link", n.link, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkLinkRef checks one reference by link id, which is what cloud-init
// resolves bond_links, vlan_link and a network's link against.
func checkLinkRef(ids map[string]string, field, target, self string) error {
	switch _, ok := ids[target]; {
	case target == "":
		return inputErr(field, "is empty; set it to the id of a link defined under links")
	case !ok:
		return inputErr(field, "link %s is not defined; define a link with that id under links.ethernets, links.bonds or links.vlans, or fix the reference", quote(target))
	case target == self:
		return inputErr(field, "link %s refers to itself; refer to another link", quote(target))
	}
	return nil
}
