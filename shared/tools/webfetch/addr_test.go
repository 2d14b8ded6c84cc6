package webfetch

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	want := map[string]string{
		// public
		"8.8.8.8":              "",
		"1.1.1.1":              "",
		"93.184.216.34":        "",
		"100.63.255.255":       "",
		"100.128.0.0":          "",
		"172.15.255.255":       "",
		"172.32.0.0":           "",
		"192.0.1.1":            "",
		"198.17.255.255":       "",
		"198.20.0.0":           "",
		"223.255.255.255":      "",
		"2606:4700:4700::1111": "",
		"2001:4860:4860::8888": "",
		"::ffff:8.8.8.8":       "",
		"64:ff9b::8.8.8.8":     "",
		"2002:808:808::1":      "",
		// IPv4
		"0.0.0.0":         "an unspecified address",
		"0.1.2.3":         `a "this network" address`,
		"10.0.0.5":        "a private address",
		"10.255.255.255":  "a private address",
		"172.16.0.1":      "a private address",
		"172.31.255.255":  "a private address",
		"192.168.1.1":     "a private address",
		"100.64.0.1":      "a carrier-grade NAT address",
		"100.127.255.255": "a carrier-grade NAT address",
		"127.0.0.1":       "a loopback address",
		"127.255.255.254": "a loopback address",
		"169.254.169.254": "a link-local address (the cloud metadata endpoint)",
		"169.254.1.1":     "a link-local address",
		"192.0.0.8":       "an IETF protocol assignment address",
		"192.0.2.1":       "a documentation address",
		"198.51.100.7":    "a documentation address",
		"203.0.113.9":     "a documentation address",
		"198.18.0.1":      "a benchmarking address",
		"198.19.255.255":  "a benchmarking address",
		"224.0.0.1":       "a multicast address",
		"239.255.255.250": "a multicast address",
		"240.0.0.1":       "a reserved address",
		"255.255.255.255": "the broadcast address",
		"192.88.99.1":     "a 6to4 relay anycast address",
		// IPv6
		"::":            "an unspecified address",
		"::1":           "a loopback address",
		"fc00::1":       "a private address",
		"fd12:3456::1":  "a private address",
		"fd00:ec2::254": "a private address (the cloud metadata endpoint)",
		"fe80::1":       "a link-local address",
		"fe80::1%eth0":  "a link-local address",
		"febf::1":       "a link-local address",
		"fec0::1":       "a site-local address",
		"ff02::1":       "a multicast address",
		"100::1":        "a discard-only address",
		"2001:db8::1":   "a documentation address",
		"2001::1":       "a Teredo tunnel address",
		"2001:2::1":     "a benchmarking address",
		"2001:10::1":    "an IETF special-purpose address",
		"64:ff9b:1::1":  "a local-use NAT64 address",
		"4000::1":       "not a global unicast address",
		// IPv4 inside IPv6
		"::ffff:127.0.0.1":         "a loopback address (IPv4-mapped form of 127.0.0.1)",
		"::ffff:10.0.0.5":          "a private address (IPv4-mapped form of 10.0.0.5)",
		"::ffff:169.254.169.254":   "a link-local address (the cloud metadata endpoint) (IPv4-mapped form of 169.254.169.254)",
		"::ffff:0.0.0.0":           "an unspecified address (IPv4-mapped form of 0.0.0.0)",
		"::ffff:100.64.0.1":        "a carrier-grade NAT address (IPv4-mapped form of 100.64.0.1)",
		"::127.0.0.1":              "a loopback address (IPv4-compatible form of 127.0.0.1)",
		"::10.0.0.5":               "a private address (IPv4-compatible form of 10.0.0.5)",
		"::8.8.8.8":                "a deprecated IPv4-compatible address",
		"::ffff:0:10.0.0.5":        "a private address (IPv4-translated form of 10.0.0.5)",
		"::ffff:0:8.8.8.8":         "an IPv4-translated address",
		"64:ff9b::127.0.0.1":       "a loopback address (NAT64 form of 127.0.0.1)",
		"64:ff9b::10.0.0.5":        "a private address (NAT64 form of 10.0.0.5)",
		"64:ff9b::169.254.169.254": "a link-local address (the cloud metadata endpoint) (NAT64 form of 169.254.169.254)",
		"2002:7f00:1::":            "a loopback address (6to4 form of 127.0.0.1)",
		"2002:c0a8:101::1":         "a private address (6to4 form of 192.168.1.1)",
	}
	got := make(map[string]string, len(want))
	for s := range want {
		got[s] = Classify(netip.MustParseAddr(s))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Classify mismatch (-want +got):\n%s", diff)
	}
	for s, reason := range want {
		if Public(netip.MustParseAddr(s)) != (reason == "") {
			t.Errorf("Public(%s) = %v, want %v", s, !(reason == ""), reason == "")
		}
	}
	if got := Classify(netip.Addr{}); got != "an invalid address" {
		t.Errorf("Classify(zero) = %q, want an invalid address", got)
	}
}
