package webfetch

import (
	"fmt"
	"net/netip"
)

// rangeRule names a range of addresses web_fetch refuses.
type rangeRule struct {
	prefix netip.Prefix
	reason string
}

func rules(reason string, prefixes ...string) []rangeRule {
	out := make([]rangeRule, len(prefixes))
	for i, p := range prefixes {
		out[i] = rangeRule{netip.MustParsePrefix(p), reason}
	}
	return out
}

// v4Rules are checked in order, so a specific range comes before the wider
// range holding it.
var v4Rules = concat(
	rules("an unspecified address", "0.0.0.0/32"),
	rules(`a "this network" address`, "0.0.0.0/8"),
	rules("a private address", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	rules("a carrier-grade NAT address", "100.64.0.0/10"),
	rules("a loopback address", "127.0.0.0/8"),
	rules("a link-local address (the cloud metadata endpoint)", "169.254.169.254/32"),
	rules("a link-local address", "169.254.0.0/16"),
	rules("an IETF protocol assignment address", "192.0.0.0/24"),
	rules("a documentation address", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"),
	rules("a 6to4 relay anycast address", "192.88.99.0/24"),
	rules("a benchmarking address", "198.18.0.0/15"),
	rules("a multicast address", "224.0.0.0/4"),
	rules("the broadcast address", "255.255.255.255/32"),
	rules("a reserved address", "240.0.0.0/4"),
)

var v6Rules = concat(
	rules("an unspecified address", "::/128"),
	rules("a loopback address", "::1/128"),
	rules("a discard-only address", "100::/64"),
	rules("a local-use NAT64 address", "64:ff9b:1::/48"),
	rules("a Teredo tunnel address", "2001::/32"),
	rules("a benchmarking address", "2001:2::/48"),
	rules("a documentation address", "2001:db8::/32", "3fff::/20"),
	rules("an IETF special-purpose address", "2001::/23"),
	rules("a private address (the cloud metadata endpoint)", "fd00:ec2::254/128"),
	rules("a private address", "fc00::/7"),
	rules("a link-local address", "fe80::/10"),
	rules("a site-local address", "fec0::/10"),
	rules("a multicast address", "ff00::/8"),
)

// Ranges whose addresses embed an IPv4 address in their low or middle bits.
var (
	compatible = netip.MustParsePrefix("::/96")
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	globalV6   = netip.MustParsePrefix("2000::/3")
)

func concat(lists ...[]rangeRule) []rangeRule {
	var out []rangeRule
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Classify says why web_fetch refuses addr, as a phrase such as "a private
// address", or returns "" for a public unicast address. IPv4-mapped,
// IPv4-compatible, IPv4-translated, NAT64 and 6to4 forms are judged by the
// IPv4 address they carry. Zones are ignored.
func Classify(addr netip.Addr) string {
	if !addr.IsValid() {
		return "an invalid address"
	}
	addr = addr.WithZone("")
	if addr.Is4In6() {
		v4 := addr.Unmap()
		if r := classify4(v4); r != "" {
			return fmt.Sprintf("%s (IPv4-mapped form of %s)", r, v4)
		}
		return ""
	}
	if addr.Is4() {
		return classify4(addr)
	}
	for _, r := range v6Rules {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	b := addr.As16()
	switch {
	case compatible.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if r := classify4(v4); r != "" {
			return fmt.Sprintf("%s (IPv4-compatible form of %s)", r, v4)
		}
		return "a deprecated IPv4-compatible address"
	case translated.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if r := classify4(v4); r != "" {
			return fmt.Sprintf("%s (IPv4-translated form of %s)", r, v4)
		}
		return "an IPv4-translated address"
	case nat64.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if r := classify4(v4); r != "" {
			return fmt.Sprintf("%s (NAT64 form of %s)", r, v4)
		}
		return ""
	case sixToFour.Contains(addr):
		v4 := netip.AddrFrom4([4]byte(b[2:6]))
		if r := classify4(v4); r != "" {
			return fmt.Sprintf("%s (6to4 form of %s)", r, v4)
		}
		return ""
	case !globalV6.Contains(addr):
		return "not a global unicast address"
	}
	return ""
}

func classify4(addr netip.Addr) string {
	for _, r := range v4Rules {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

// Public reports whether addr is a public unicast internet address, the
// only kind web_fetch reaches by default.
func Public(addr netip.Addr) bool { return Classify(addr) == "" }
