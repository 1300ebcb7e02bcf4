package networkdata

import (
	"strconv"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// checkLinks checks that link ids are set and unique and that bonds and vlans
// only refer to defined links. It returns the link ids with their fields.
func checkLinks(l capm3.NetworkDataLink) (map[string]string, error) {
	ids := make(map[string]string, len(l.Bonds)+len(l.Ethernets)+len(l.Vlans))
	add := func(field, id string) error {
		if id == "" {
			return inputErr(field+".id", "is empty; give every link a unique id")
		}
		if other, dup := ids[id]; dup {
			return inputErr(field+".id", "link id %s is also used by %s; link ids must be unique across ethernets, bonds and vlans", quote(id), other)
		}
		ids[id] = field
		return nil
	}
	for i, b := range l.Bonds {
		if err := add(item(root+".links.bonds", i, b.Id), b.Id); err != nil {
			return nil, err
		}
	}
	for i, e := range l.Ethernets {
		if err := add(item(root+".links.ethernets", i, e.Id), e.Id); err != nil {
			return nil, err
		}
	}
	for i, v := range l.Vlans {
		if err := add(item(root+".links.vlans", i, v.Id), v.Id); err != nil {
			return nil, err
		}
	}
	for i, b := range l.Bonds {
		field := item(root+".links.bonds", i, b.Id)
		for j, member := range b.BondLinks {
			if err := checkLinkRef(ids, field+".bondLinks["+strconv.Itoa(j)+"]", member, b.Id); err != nil {
				return nil, err
			}
		}
	}
	for i, v := range l.Vlans {
		if err := checkLinkRef(ids, item(root+".links.vlans", i, v.Id)+".vlanLink", v.VlanLink, v.Id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// checkNetworks checks that network ids are set and unique and that every
// network sits on a defined link.
func checkNetworks(nets []networkSpec, links map[string]string) error {
	ids := make(map[string]string, len(nets))
	for _, n := range nets {
		if n.id == "" {
			return inputErr(n.field+".id", "is empty; give every network a unique id")
		}
		if other, dup := ids[n.id]; dup {
			return inputErr(n.field+".id", "network id %s is also used by %s; network ids must be unique across all network types", quote(n.id), other)
		}
		ids[n.id] = n.field
		if err := checkLinkRef(links, n.field+".link", n.link, ""); err != nil {
			return err
		}
	}
	return nil
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
