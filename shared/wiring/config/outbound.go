package config

import (
	"fmt"
	"net/netip"
)

// Outbound is where the gateway's own HTTP requests may go: web_fetch and
// the webhook deliveries of scheduled check-ins reach public internet
// addresses only, plus the networks listed here, which the operator
// trusts (a LAN host, a service on this machine). The model never
// widens it.
type Outbound struct {
	// AllowNetworks are CIDR prefixes, such as 192.168.1.0/24 or
	// 127.0.0.1/32.
	AllowNetworks []string `yaml:"allow_networks"`
}

// Networks returns the allowed networks, or an error naming the first
// prefix that does not parse.
func (o Outbound) Networks() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(o.AllowNetworks))
	for _, s := range o.AllowNetworks {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("config: outbound.allow_networks: %q is not a CIDR prefix such as 192.168.1.0/24", s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
